/**
 * The bench's server process (bench/server.ts) from one build, started as `npm start`
 * starts its server (src/cli/node-flags.ts says why the flags), apart from the clients.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Build } from './built.js';

export interface Addresses {
  readonly wsUrl: string;
  readonly wtUrl: string;
  readonly certHash: string;
  readonly grpcPort: number;
  readonly rawPort: number;
  /** The bare node:http echo (bench/peers.ts `startRawHttp`). */
  readonly rawHttpPort: number;
  readonly docker: { readonly on: boolean; readonly reason: string };
}

export interface ServerProcess {
  readonly addresses: Addresses;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function startServerProcess(build: Build): Promise<ServerProcess> {
  const child: ChildProcess = spawn(process.execPath, [...build.nodeFlags.longLivedNodeFlags, '--expose-gc', '--import', 'tsx', 'bench/server.ts'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, CALLWIRE_DIST: build.dist },
  });
  const addresses = await new Promise<Addresses>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench/server.ts (${build.dist}) exited ${code} before it listened`)));
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line) as Addresses));
  });
  child.removeAllListeners('exit');
  return {
    addresses,
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
