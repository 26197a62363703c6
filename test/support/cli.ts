import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = new URL('../../', import.meta.url);
/** The CLI as npm installs it, relative to the package's root: package.json's `bin`, the bundle scripts/build.mjs makes. */
export const cliBin = (JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { bin: { callwire: string } }).bin.callwire;
export const cliPath = fileURLToPath(new URL(cliBin, ROOT));
const EXITS_WITH_PARENT = fileURLToPath(new URL('./exits-with-parent.mjs', import.meta.url));

/** `env` with the preload that ends a Node child whose test process died without stopping it (exits-with-parent.mjs). */
export function exitingWithParent(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, NODE_OPTIONS: `${env['NODE_OPTIONS'] ?? ''} --import=${EXITS_WITH_PARENT}`.trim() };
}

export interface CliRun {
  readonly child: ChildProcessWithoutNullStreams;
  stdout: string;
  stderr: string;
  /** stdout and stderr lines in the order they arrived, tagged. */
  readonly lines: { stream: 'stdout' | 'stderr'; line: string }[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitFor(pattern: RegExp, stream?: 'stdout' | 'stderr', timeoutMs?: number): Promise<string>;
}

/**
 * Spawns the real CLI (dist/bin/callwire.js) as a child process; `prefix` is a command
 * that runs it (`ip netns exec <ns>`), which must exec it so the child is the CLI.
 */
/** `stdin`: 'pipe' to write to, 'ignore' a pipe closed at once, 'null' /dev/null (as cron and CI give). */
export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv; stdin?: 'pipe' | 'ignore' | 'null'; prefix?: string[] | undefined } = {}): CliRun {
  const [command, ...argv] = [...(options.prefix ?? []), process.execPath, cliPath, ...args] as [string, ...string[]];
  const child = spawn(command, argv, { env: exitingWithParent({ ...process.env, ...options.env }), stdio: [options.stdin === 'null' ? 'ignore' : 'pipe', 'pipe', 'pipe'] }) as ChildProcessWithoutNullStreams; // with 'null', child.stdin is null
  const run: CliRun = {
    child,
    stdout: '',
    stderr: '',
    lines: [],
    exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
    waitFor(pattern, stream, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const text = stream === 'stderr' ? run.stderr : stream === 'stdout' ? run.stdout : run.stdout + run.stderr;
          const m = pattern.exec(text);
          if (m) resolve(m[0]);
          return !!m;
        };
        if (check()) return;
        const timer = setInterval(() => {
          if (check()) clearInterval(timer);
        }, 10);
        setTimeout(() => {
          clearInterval(timer);
          reject(new Error(`no ${pattern} within ${timeoutMs} ms; stdout=${run.stdout.slice(-500)} stderr=${run.stderr.slice(-500)}`));
        }, timeoutMs);
      });
    },
  };
  const collect = (stream: 'stdout' | 'stderr') => {
    let partial = '';
    return (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      run[stream] += text;
      partial += text;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) run.lines.push({ stream, line });
    };
  };
  child.stdout.on('data', collect('stdout'));
  child.stderr.on('data', collect('stderr'));
  if (options.stdin === 'ignore') child.stdin.end();
  return run;
}
