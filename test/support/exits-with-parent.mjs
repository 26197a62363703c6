// Preloaded (`NODE_OPTIONS=--import=…`) into every Node process a test spawns (test/support/cli.ts,
// wt-child.ts): when the test process dies without its teardown (a killed or crashed vitest worker),
// its children are handed to another parent, and would otherwise serve on for good, holding ports
// and engine resources. Plain JavaScript: the CLI under test is dist/, run by Node without tsx.
import { setInterval } from 'node:timers';

const parent = process.ppid;
let orphanedFor = 0;
setInterval(() => {
  if (process.ppid === parent) return;
  orphanedFor += 1;
  // SIGTERM first, so the process cleans up as it would when stopped; SIGKILL if that did not end it.
  if (orphanedFor === 1) process.kill(process.pid, 'SIGTERM');
  else if (orphanedFor > 5) process.kill(process.pid, 'SIGKILL');
}, 1000).unref();
