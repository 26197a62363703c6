/**
 * callwire as its users run it: the compiled `dist/` (every bench script builds it
 * first), typed by its source. Importing `src/` through tsx instead cost the client 7%
 * at 64 calls in flight (tsx wraps every named closure in a `__name` call), and a static import of `dist/` would not type-check on a clone that has not built.
 *
 * CALLWIRE_DIST names another build's `dist/` (an absolute path): `--baseline` starts a
 * second server process with it, so two builds run side by side under one bench.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as NodeFlags from '../src/cli/node-flags.js';
import type * as Client from '../src/client-node/index.js';
import type * as Protocol from '../src/protocol/index.js';
import type * as Server from '../src/server/index.js';

/** The modules of one build of callwire. */
export interface Build {
  /** The build's `dist/` directory, absolute. */
  readonly dist: string;
  readonly client: typeof Client;
  readonly protocol: typeof Protocol;
  readonly server: typeof Server;
  readonly nodeFlags: typeof NodeFlags;
  /** The CLI as this build's users run it: its bundle, or its entry module in a build from before the bundle (450a2c2 and older). */
  readonly cli: string;
}

export const THIS_DIST = resolve(import.meta.dirname, '../dist');

export async function loadBuild(dist: string): Promise<Build> {
  const load = async <T>(path: string): Promise<T> => (await import(pathToFileURL(resolve(dist, path)).href)) as T;
  return {
    dist: resolve(dist),
    // A build from before the client's browser/Node split (1959227 and older) has its Node client at client/.
    client: await load<typeof Client>(existsSync(resolve(dist, 'client-node/index.js')) ? 'client-node/index.js' : 'client/index.js'),
    protocol: await load<typeof Protocol>('protocol/index.js'),
    server: await load<typeof Server>('server/index.js'),
    nodeFlags: await load<typeof NodeFlags>('cli/node-flags.js'),
    cli: resolve(dist, existsSync(resolve(dist, 'bin/callwire.js')) ? 'bin/callwire.js' : 'cli/main.js'),
  };
}

const build = await loadBuild(process.env['CALLWIRE_DIST'] ?? THIS_DIST);
export const { client, protocol, server, nodeFlags } = build;
