import { request } from 'node:http';

export interface Drained {
  /** Values before the envelope. */
  readonly values: number;
  /** Characters of their `text` fields, all together. */
  readonly textChars: number;
  /** The last value's `text`, for a check that the end arrived. */
  readonly lastText: string | undefined;
  /** The terminal envelope (HTTP-1). */
  readonly envelope: Record<string, unknown>;
}

/**
 * POSTs a subscription to a server's plain HTTP (spec §5.6) and reads its NDJSON as it
 * arrives, keeping nothing but counts: a reader of a 600 MiB answer that costs the test
 * runner little. `onBytes` sees the bytes read so far after each chunk and may return a
 * number of ms to stop reading for (the socket is paused: the server must wait, HTTP-2).
 */
export function drainNdjson(url: string, input: unknown, onBytes: (bytes: number) => number | void = () => undefined): Promise<Drained> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } });
    req.on('error', reject);
    req.on('response', (res) => {
      let bytes = 0;
      let pending = '';
      let values = 0;
      let textChars = 0;
      let lastText: string | undefined;
      let lastLine = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        bytes += Buffer.byteLength(chunk);
        pending += chunk;
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          if (line === '') continue;
          if (lastLine !== '') {
            const value = JSON.parse(lastLine) as { text?: string };
            values++;
            textChars += value.text?.length ?? 0;
            lastText = value.text;
          }
          lastLine = line;
        }
        const pauseMs = onBytes(bytes);
        if (typeof pauseMs === 'number' && pauseMs > 0) {
          res.pause();
          setTimeout(() => res.resume(), pauseMs);
        }
      });
      res.on('end', () => {
        if (pending.trim() !== '') lastLine = pending;
        try {
          resolve({ values, textChars, lastText, envelope: JSON.parse(lastLine) as Record<string, unknown> });
        } catch (error) {
          reject(new Error(`no envelope at the end (status ${res.statusCode}): ${String(error)}; last: ${lastLine.slice(0, 300)}`));
        }
      });
      res.on('error', reject);
    });
    req.end(JSON.stringify(input));
  });
}
