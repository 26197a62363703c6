/**
 * The bench's server process (bench/server.ts) from one build, and its other processes
 * (the fleet's gateway), started as `npm start` starts its server (src/cli/node-flags.ts
 * says why the flags), apart from the clients.
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
  const { info, pid, stop } = await startBenchProcess<Addresses>(build, 'bench/server.ts');
  return { addresses: info, pid, stop };
}

/** A process of the bench's that is up once it has printed its one JSON line (what it serves on). */
export interface BenchProcess<T> {
  readonly info: T;
  readonly pid: number;
  stop(): Promise<void>;
}

/** Runs `script` of the bench with `build` and the server's Node flags; resolves with its first line, parsed. */
export async function startBenchProcess<T>(build: Build, script: string, env: NodeJS.ProcessEnv = {}): Promise<BenchProcess<T>> {
  const child: ChildProcess = spawn(process.execPath, [...build.nodeFlags.longLivedNodeFlags, '--expose-gc', '--import', 'tsx', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env, CALLWIRE_DIST: build.dist },
  });
  const info = await new Promise<T>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} (${build.dist}) exited ${code} before it listened`)));
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line) as T));
  });
  child.removeAllListeners('exit');
  return { info, pid: child.pid!, stop: () => stopChild(child) };
}

/** SIGTERM to a child of the bench; resolves once it has exited (at once if it already has). */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
