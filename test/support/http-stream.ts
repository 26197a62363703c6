import { request, type IncomingMessage } from 'node:http';

/** One record of a streamed HTTP answer (spec §5.6): an NDJSON line, or an SSE event with its `id:` and `event:`. */
export interface StreamRecord {
  readonly data: string;
  readonly id?: string;
  readonly event?: string;
}

export interface StreamRead {
  readonly status: number;
  /** Headers and trailers, names in lower case. */
  readonly headers: Record<string, string>;
  /** Complete records only: a record cut in its middle is not one. */
  readonly records: StreamRecord[];
  /** The answer ended as HTTP ends it; false when `stop` cut it, or the connection broke. */
  readonly complete: boolean;
}

/**
 * POSTs to `url` and reads the answer record by record as it arrives, with Node's own
 * HTTP client. `stop`, asked after each record, ends the read there (the caller cuts
 * the connection in it, or it is destroyed): what a reader has when its connection is lost.
 */
export function readStream(url: string, init: { headers?: Record<string, string>; body?: string }, stop?: (records: readonly StreamRecord[], headers: IncomingMessage['headers']) => boolean): Promise<StreamRead> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers } });
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      const sse = /^text\/event-stream/.test(res.headers['content-type'] ?? '');
      const records: StreamRecord[] = [];
      let pending = '';
      let done = false;
      const finish = (complete: boolean): void => {
        if (done) return;
        done = true;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries({ ...res.headers, ...res.trailers })) if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
        resolve({ status: res.statusCode ?? 0, headers, records, complete });
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (done) return;
        pending += chunk;
        const separator = sse ? '\n\n' : '\n';
        for (let at = pending.indexOf(separator); at >= 0; at = pending.indexOf(separator)) {
          records.push(sse ? parseEvent(pending.slice(0, at)) : { data: pending.slice(0, at) });
          pending = pending.slice(at + separator.length);
          if (stop?.(records, res.headers)) {
            finish(false);
            req.destroy();
            return;
          }
        }
      });
      res.on('end', () => {
        if (pending.trim() !== '') records.push(sse ? parseEvent(pending) : { data: pending });
        finish(true);
      });
      res.on('error', () => finish(false));
      res.on('close', () => finish(false));
    });
    req.end(init.body);
  });
}

function parseEvent(text: string): StreamRecord {
  let id: string | undefined;
  let event: string | undefined;
  const data: string[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('id: ')) id = line.slice(4);
    else if (line.startsWith('event: ')) event = line.slice(7);
    else if (line.startsWith('data: ')) data.push(line.slice(6));
  }
  return { data: data.join('\n'), ...(id === undefined ? {} : { id }), ...(event === undefined ? {} : { event }) };
}

/** The stdout an exec's records carry, in order (its terminal frame and the envelope carry none). */
export function stdoutOf(records: readonly StreamRecord[]): string {
  let text = '';
  for (const r of records) {
    const item = JSON.parse(r.data) as { stream?: string; text?: string };
    if (item.stream === 'stdout') text += item.text;
  }
  return text;
}
