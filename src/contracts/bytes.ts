import { z } from 'zod';

/**
 * Bytes in inputs and outputs: msgpack `bin`, or `{"$base64"}` under JSON (spec §5.3).
 * Typed as plain Uint8Array, whatever buffer backs it.
 */
export const bytesSchema = z.custom<Uint8Array>((value) => value instanceof Uint8Array, { message: 'expected bytes' });
