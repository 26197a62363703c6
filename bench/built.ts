/**
 * callwire as its users run it: the compiled `dist/` (every bench script builds it
 * first), typed by its source. Importing `src/` through tsx instead cost the client 7%
 * at 64 calls in flight (bench/PROFILE.md, "ran callwire from its TypeScript source"),
 * and a static import of `dist/` would not type-check on a clone that has not built.
 */
import type * as NodeFlags from '../src/cli/node-flags.js';
import type * as Client from '../src/client/index.js';
import type * as Io from '../src/io/index.js';
import type * as Protocol from '../src/protocol/index.js';
import type * as Server from '../src/server/index.js';

const built = async <T>(path: string): Promise<T> => (await import(path)) as T;

export const client = await built<typeof Client>('../dist/client/index.js');
export const io = await built<typeof Io>('../dist/io/index.js');
export const protocol = await built<typeof Protocol>('../dist/protocol/index.js');
export const server = await built<typeof Server>('../dist/server/index.js');
export const nodeFlags = await built<typeof NodeFlags>('../dist/cli/node-flags.js');
