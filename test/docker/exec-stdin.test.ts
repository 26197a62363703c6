import { beforeAll, describe, expect, it } from 'vitest';
import { execFrames } from '../../src/client/index.js';
import { useExecServer } from '../support/exec-server.js';
import { transportCases } from '../support/server-fixture.js';

const MIB = 1024 * 1024;

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

  for (const transport of [transportCases[0]!, transportCases[2]!]) {
    it(`${transport.name}: 64 MiB into wc -c arrive whole, and a command that does not read holds the source back`, async () => {
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
});
