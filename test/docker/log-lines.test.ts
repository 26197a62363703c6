import { describe, expect, it } from 'vitest';
import { ttyLines } from '../../src/operations/docker/logs.js';

async function* chunks(...parts: string[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.from(part);
}

async function collect(source: AsyncIterable<{ timestamp: string; text: string }>) {
  const out: { timestamp: string; text: string }[] = [];
  for await (const line of source) out.push(line);
  return out;
}

describe("a TTY container's log lines (LIM-1)", () => {
  it('a whole long line that arrives in one chunk with its end goes out in pieces of at most 256 Ki characters, the first with its timestamp', async () => {
    const long = 'x'.repeat(600_000);
    const lines = await collect(ttyLines(chunks(`2026-12-03T00:00:00.000000000Z ${long}\r\n2026-12-03T00:00:01.000000000Z next\r\n`)));
    expect(lines.every((line) => line.text.length <= 256 * 1024)).toBe(true);
    expect(lines.slice(0, -1).map((line) => line.text).join('')).toBe(`${long}\r`);
    expect(lines[0]!.timestamp).toBe('2026-12-03T00:00:00.000000000Z');
    expect(lines.slice(1, -1).every((line) => line.timestamp === '')).toBe(true);
    expect(lines.at(-1)).toEqual({ stream: 'stdout', timestamp: '2026-12-03T00:00:01.000000000Z', text: 'next\r' });
  });
});
