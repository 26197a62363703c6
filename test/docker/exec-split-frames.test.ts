import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { exec, type ExecOutput } from '../../src/client/index.js';
import { useExecServer } from '../support/exec-server.js';

/**
 * Output of 8 KiB or more leaves the server as a split frame, its bytes written after
 * the envelope's head by the server's own WebSocket frame writer (src/transports/websocket-frame.ts);
 * smaller output goes whole through `ws`. Pieces of every size on both sides of both
 * cuts and of the WebSocket length encodings, on stdout and stderr in turn, each
 * holding every byte value, must arrive byte for byte.
 */
describe('exec output in split frames arrives byte for byte', () => {
  const { containerId, client } = useExecServer();

  it('pieces of 1 B to 3 MiB of every byte value, stdout and stderr interleaved', async () => {
    const sizes = [1, 125, 126, 127, 8191, 8192, 8193, 32_768, 65_535, 65_536, 65_537, 200_000, 1_048_576, 3_145_728];
    // Every byte value at the start of the file, then random bytes: each piece below starts at a different place.
    const blob = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(3 * 1024 * 1024 + 1024)]);
    const upload = await exec(client(), containerId(), ['sh', '-c', 'cat > /tmp/split-blob'], { stdin: blob }).result;
    expect(upload.exitCode).toBe(0);

    const expected = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    const script = sizes.map((size, i) => {
      const offset = (i * 7919) % 256;
      const fd = i % 2 === 0 ? 1 : 2;
      expected[fd === 1 ? 'stdout' : 'stderr'].push(blob.subarray(offset, offset + size));
      return `tail -c +${offset + 1} /tmp/split-blob | head -c ${size} >&${fd}`;
    });
    const handle = exec(client(), containerId(), ['sh', '-c', script.join('; ')], { encoding: 'binary' });
    const got = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    handle.output.subscribe((frame: ExecOutput) => {
      if ('data' in frame) got[frame.stream].push(Buffer.from(frame.data));
    });
    const result = await handle.result;
    expect(result.exitCode).toBe(0);
    for (const stream of ['stdout', 'stderr'] as const) {
      const want = Buffer.concat(expected[stream]);
      const have = Buffer.concat(got[stream]);
      expect(have.byteLength).toBe(want.byteLength);
      expect(have.equals(want)).toBe(true);
    }
    expect(result.stdoutBytes).toBe(Buffer.concat(expected.stdout).byteLength);
    expect(result.stderrBytes).toBe(Buffer.concat(expected.stderr).byteLength);
    // Every byte value crossed on both streams.
    expect(new Set(Buffer.concat(got.stdout)).size).toBe(256);
    expect(new Set(Buffer.concat(got.stderr)).size).toBe(256);
  }, 120_000);
});
