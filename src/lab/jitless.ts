import { z } from 'zod';

// zod probes for eval with `new Function` before its first object parse; under the
// Lab's CSP (no 'unsafe-eval') the probe fails quietly but the browser still reports
// a securitypolicyviolation. Jitless parsing never probes. Imported first by main.ts,
// so no parse can run before it.
z.config({ jitless: true });
