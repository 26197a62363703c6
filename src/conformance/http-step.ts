import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { codecs, type CodecName } from '../protocol/index.js';

const EXPECT_CONTINUE_ABOVE = 64 * 1024;

/** One HTTP call of a scenario (spec §5.6), as the runner sends it. */
export interface HttpStep {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  /** The call's input, encoded in the run's codec, with that codec's Content-Type. */
  readonly input?: unknown;
  /** A raw body instead (give its Content-Type in headers). */
  readonly bodyText?: string | undefined;
  /** Sends the headers and this many bytes of the body, then stalls (the read deadline). */
  readonly stallAfterBytes?: number | undefined;
  /** Closes the connection once this many records have arrived (a client that goes away). */
  readonly closeAfterLines?: number | undefined;
  /** Stops reading once this many records have arrived, for `forMs` and then while `whileSlow` runs (a slow reader). */
  readonly slowReader?: { readonly afterRecords: number; readonly forMs: number } | undefined;
}

export interface HttpAnswer {
  readonly status: number;
  /** Response headers and trailers, names in lower case. */
  readonly headers: Record<string, string>;
  /** NDJSON lines, or SSE `data`, decoded as JSON; the last is the result record. */
  readonly records: unknown[];
  /** Whether the last record came as an SSE `terminal` event. */
  readonly sseTerminal: boolean;
  /** The `id:` of the last SSE event that had one (what `Last-Event-ID` says on a reconnect). */
  readonly lastEventId: string | undefined;
  readonly closedEarly: boolean;
}

/**
 * Sends one HTTP call to the server behind `baseUrl` (the WebSocket URL's origin) and
 * reads the answer record by record, as it arrives: a record counts when its line (or
 * SSE event) is complete, so `closeAfterLines` and `slowReader` act on values the
 * server has really sent, not on a body read whole. `whileSlow` runs while a slow
 * reader has stopped reading; its failure is the step's.
 */
export function sendHttp(baseUrl: string, codec: CodecName, step: HttpStep, timeoutMs: number, whileSlow?: () => Promise<void>): Promise<HttpAnswer> {
  const url = new URL(step.path, baseUrl.replace(/^ws/, 'http'));
  let body: Uint8Array | undefined;
  const headers: Record<string, string> = { ...step.headers };
  if (step.bodyText !== undefined) body = new TextEncoder().encode(step.bodyText);
  else if (step.input !== undefined) {
    body = codecs[codec].encode(step.input);
    headers['content-type'] ??= codec === 'json' ? 'application/json' : 'application/msgpack';
  }
  if (body && step.stallAfterBytes === undefined) headers['content-length'] = String(body.byteLength);
  // As curl does for large bodies: ask first, so a refusal by the headers (413) comes before the body.
  const askFirst = body !== undefined && body.byteLength > EXPECT_CONTINUE_ABOVE && step.stallAfterBytes === undefined;
  if (askFirst) headers['expect'] = '100-continue';
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<HttpAnswer>((resolve, reject) => {
    const req = send(url, { method: step.method, headers, rejectUnauthorized: false });
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const timer = setTimeout(() => {
      req.destroy();
      settle(() => reject(new Error(`no complete HTTP answer within ${timeoutMs} ms`)));
    }, timeoutMs);
    let answered = false;
    req.on('error', (error) => {
      // The server may answer and close before taking the whole body; its answer is what counts.
      if (!answered) settle(() => reject(error));
    });
    req.on('response', (res: IncomingMessage) => {
      answered = true;
      const records = new RecordReader(/^text\/event-stream/.test(res.headers['content-type'] ?? ''));
      let slowed = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        records.push(chunk);
        const got = records.records.length;
        if (step.closeAfterLines !== undefined && got >= step.closeAfterLines) {
          req.destroy();
          settle(() => resolve({ status: res.statusCode ?? 0, headers: flat(res.headers), records: records.records, sseTerminal: false, lastEventId: records.lastEventId, closedEarly: true }));
          return;
        }
        if (step.slowReader !== undefined && !slowed && got >= step.slowReader.afterRecords) {
          slowed = true;
          res.pause();
          const forMs = step.slowReader.forMs;
          void new Promise((r) => setTimeout(r, forMs))
            .then(() => whileSlow?.())
            .then(
              () => res.resume(),
              (error: unknown) => {
                req.destroy();
                settle(() => reject(error instanceof Error ? error : new Error(String(error))));
              },
            );
        }
      });
      res.on('end', () => {
        records.end();
        settle(() => resolve({ status: res.statusCode ?? 0, headers: { ...flat(res.headers), ...flat(res.trailers) }, records: records.records, sseTerminal: records.sseTerminal, lastEventId: records.lastEventId, closedEarly: false }));
      });
    });
    if (step.stallAfterBytes !== undefined) {
      // Part of the body, and then nothing: the server's read deadline must end it.
      req.flushHeaders();
      if (body) req.write(body.subarray(0, step.stallAfterBytes));
    } else if (askFirst) {
      req.on('continue', () => req.end(body));
    } else {
      req.end(body);
    }
  });
}

function flat(headers: IncomingMessage['headers'] | NodeJS.Dict<string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}

/** NDJSON lines, or SSE events, decoded as JSON as each one completes. */
class RecordReader {
  readonly records: unknown[] = [];
  sseTerminal = false;
  lastEventId: string | undefined;
  private pending = '';

  constructor(private readonly sse: boolean) {}

  push(chunk: string): void {
    this.pending += chunk;
    const separator = this.sse ? '\n\n' : '\n';
    let at: number;
    while ((at = this.pending.indexOf(separator)) >= 0) {
      this.take(this.pending.slice(0, at));
      this.pending = this.pending.slice(at + separator.length);
    }
  }

  /** What is left when the body ends: a last record without its separator. */
  end(): void {
    this.take(this.pending);
    this.pending = '';
  }

  private take(text: string): void {
    if (text.trim() === '') return;
    if (!this.sse) return void this.records.push(json(text));
    const lines = text.split('\n');
    if (lines.some((l) => l === 'event: terminal')) this.sseTerminal = true;
    const id = lines.find((l) => l.startsWith('id: '));
    if (id !== undefined) this.lastEventId = id.slice('id: '.length);
    this.records.push(json(lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice('data: '.length)).join('\n')));
  }
}

function json(text: string): unknown {
  try {
    return codecs.json.decode(new TextEncoder().encode(text));
  } catch {
    return { unparsable: text };
  }
}
