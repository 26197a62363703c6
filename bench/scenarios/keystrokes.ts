/**
 * A keystroke through a terminal: typed into a pty (util-linux `script`), through the
 * client, to a remote `cat` on a raw tty and back. Every subject with a tty (the CLIs, as
 * whole processes), the same engine, in interleaved rounds: each round runs a session of
 * every subject in turn and takes its median, so the ratios are per round.
 */
import { spawn } from 'node:child_process';
import { median } from '../measure.js';
import type { Bench } from '../scenario.js';
import { recordAll, roundsOf } from './compare.js';

const CAT_ON_RAW_TTY = `sh -c 'stty raw -echo; echo ready; cat'`;
const KEYS = 200;

export async function keystrokes(bench: Bench): Promise<void> {
  const container = bench.container.get();
  const subjects = bench.lineup.subjects.filter((s) => s.ttyCommand);
  const values = await roundsOf(bench, subjects, bench.options.runs, (s) => keystrokeMedian(s.ttyCommand!(container, CAT_ON_RAW_TTY)));
  recordAll(bench.record, subjects, [{ key: { group: 'exec', metric: 'keystroke echo, tty (median)', unit: 'ms' }, values }]);
}

/** Median milliseconds from a byte written into a pty running `command` to its echo. */
async function keystrokeMedian(command: string): Promise<number> {
  const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'ignore'], env: process.env });
  let seen = '';
  let wake: (() => void) | undefined;
  child.stdout.on('data', (d: Buffer) => {
    seen += d.toString('latin1');
    wake?.();
  });
  const until = (text: string): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (seen.includes(text)) resolve();
        else wake = check;
      };
      check();
    });
  await until('ready');
  const times: number[] = [];
  for (let i = 0; i < KEYS; i++) {
    const key = String.fromCharCode(97 + (i % 26));
    seen = '';
    const t = performance.now();
    child.stdin.write(key);
    await until(key);
    times.push(performance.now() - t);
  }
  child.kill();
  return median(times);
}
