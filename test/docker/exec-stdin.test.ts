import { beforeAll, describe, expect, it } from 'vitest';
import { exec, execFrames } from '../../src/client/index.js';
import { useExecServer } from '../support/exec-server.js';
import { carrierCases } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';

const MIB = 1024 * 1024;

/** Fails with the stage's name after 15 s, so a hang says where it is. */
function stage<T>(name: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`stage "${name}" did not finish within 15 s`)), 15_000)))]).finally(() => clearTimeout(timer));
}

/** A source that counts what was pulled from it. */
function chunks(count: number, pulled: { n: number }): AsyncIterable<Uint8Array> {
  return (async function* () {
    for (let i = 0; i < count; i++) {
      pulled.n++;
      yield new Uint8Array(MIB).fill(0x61);
    }
  })();
}

async function run(frames: AsyncGenerator<unknown, { exitCode: number }>): Promise<{ text: string; exitCode: number }> {
  let text = '';
  for (let step = await frames.next(); ; step = await frames.next()) {
    if (step.done) return { text, exitCode: step.value.exitCode };
    const frame = step.value as { text?: string };
    text += frame.text ?? '';
  }
}

/** exec's stdin as the call's input stream (spec §4.7), from the SDK, over both transports. */
describe('exec stdin streamed through the SDK', () => {
  const { fx, containerId: container } = useExecServer({ webTransport: true });
  let containerId = '';
  beforeAll(() => {
    containerId = container();
  });

  for (const transport of carrierCases) {
    it.skipIf(transport.missing !== undefined)(skipTitle(`${transport.name}: 64 MiB into wc -c arrive whole, and a command that does not read holds the source back`, transport.missing), async () => {
      const client = await fx.client(transport);
      const pulled = { n: 0 };
      expect(await run(execFrames(client, containerId, ['wc', '-c'], { stdin: chunks(64, pulled) }))).toEqual({ text: `${64 * MIB}\n`, exitCode: 0 });
      expect(pulled.n).toBe(64);

      // The command sleeps before it reads: only the credit window and the pipes' buffers are pulled meanwhile.
      const slow = { n: 0 };
      const frames = run(execFrames(client, containerId, ['sh', '-c', 'sleep 2; wc -c'], { stdin: chunks(100, slow) }));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      console.log(`${transport.name}: pulled ${slow.n} MiB of 100 while the command slept`);
      expect(slow.n).toBeLessThan(16);
      expect(await frames).toEqual({ text: `${100 * MIB}\n`, exitCode: 0 });
      expect(slow.n).toBe(100);
    }, 60_000);
  }

  for (const transport of carrierCases) {
    it.skipIf(transport.missing !== undefined)(skipTitle(`${transport.name}: exec's handle: stdin.write and end, resize, signal (EXEC-8, EXEC-9, EXEC-10)`, transport.missing), async () => {
      const client = await fx.client(transport);
      // Writable stdin: each write resolves once sent; end() is the command's end of file.
      const cat = exec(client, containerId, ['sh', '-c', 'cat; echo "[eof]"'], { stdin: 'pipe' });
      const out: string[] = [];
      cat.output.subscribe({ next: (f) => out.push('text' in f ? f.text : ''), error: () => undefined });
      await cat.stdin.write('one ');
      await cat.stdin.write(new TextEncoder().encode('two'));
      cat.stdin.end();
      expect(await stage('cat', cat.result)).toMatchObject({ exitCode: 0, stderrBytes: 0 });
      expect(out.join('')).toBe('one two[eof]\n');

      // A web ReadableStream as stdin.
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('abc'));
          controller.enqueue(new TextEncoder().encode('de'));
          controller.close();
        },
      });
      // Call options (a window, an admission callback) go to the call, never into the operation's input.
      let admitted = false;
      const wc = exec(client, containerId, ['wc', '-c'], { stdin: body, windowBytes: 64 * 1024, onAdmitted: () => (admitted = true) });
      const counted: string[] = [];
      wc.output.subscribe({ next: (f) => counted.push('text' in f ? f.text : ''), error: () => undefined });
      expect((await stage('wc from a ReadableStream', wc.result)).exitCode).toBe(0);
      expect(counted.join('').trim()).toBe('5');
      expect(admitted).toBe(true);

      // A terminal, resized while it runs; its output merged into stdout.
      const tty = exec(client, containerId, ['sh', '-c', 'read x; stty size; echo err >&2'], { stdin: 'pipe', tty: { cols: 70, rows: 20 } });
      const screen: string[] = [];
      tty.output.subscribe({ next: (f) => screen.push(`${f.stream}:${'text' in f ? f.text : ''}`), error: () => undefined });
      tty.resize(132, 43);
      await tty.stdin.write('\r');
      const ttyResult = await stage('tty', tty.result);
      expect(screen.every((s) => s.startsWith('stdout:'))).toBe(true);
      expect(screen.map((s) => s.slice('stdout:'.length)).join('')).toBe('\r\n43 132\r\nerr\r\n');
      expect(ttyResult).toMatchObject({ exitCode: 0, stderrBytes: 0 });

      // A signal without a terminal: the trap's exit code is the result.
      // SIGTERM, not SIGINT: a shell started with SIGINT ignored (as under an engine started from a script) cannot trap it.
      const trapped = exec(client, containerId, ['sh', '-c', "trap 'exit 42' TERM; echo ready; while true; do sleep 0.05; done"]);
      await stage('trap ready', new Promise<void>((resolve, reject) => trapped.output.subscribe({ next: () => resolve(), error: reject })));
      trapped.signal('SIGTERM');
      expect((await stage('SIGTERM', trapped.result)).exitCode).toBe(42);

      // Without stdin: 'pipe' there is no stdin to write to.
      const closed = exec(client, containerId, ['true']);
      await expect(closed.stdin.write('x')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      expect((await closed.result).exitCode).toBe(0);
    }, 60_000);
  }
});
