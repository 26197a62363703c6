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
  /** Closes the connection once this many lines have arrived (a client that goes away). */
  readonly closeAfterLines?: number | undefined;
}

export interface HttpAnswer {
  readonly status: number;
  /** Response headers and trailers, names in lower case. */
  readonly headers: Record<string, string>;
  /** NDJSON lines, or SSE `data`, decoded as JSON; the last is the terminal envelope. */
  readonly records: unknown[];
  /** Whether the last record came as an SSE `terminal` event. */
  readonly sseTerminal: boolean;
  readonly closedEarly: boolean;
}

/** Sends one HTTP call to the server behind `baseUrl` (the WebSocket URL's origin) and reads the whole answer. */
export function sendHttp(baseUrl: string, codec: CodecName, step: HttpStep, timeoutMs: number): Promise<HttpAnswer> {
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
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no complete HTTP answer within ${timeoutMs} ms`));
    }, timeoutMs);
    let answered = false;
    req.on('error', (error) => {
      // The server may answer and close before taking the whole body; its answer is what counts.
      if (answered) return;
      clearTimeout(timer);
      reject(error);
    });
    req.on('response', (res: IncomingMessage) => {
      answered = true;
      let text = '';
      let closedEarly = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (step.closeAfterLines !== undefined && text.split('\n').filter(Boolean).length >= step.closeAfterLines && !closedEarly) {
          closedEarly = true;
          req.destroy();
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: flat(res.headers), records: parse(text).records, sseTerminal: false, closedEarly });
        }
      });
      res.on('end', () => {
        clearTimeout(timer);
        if (closedEarly) return;
        const parsed = parse(text);
        resolve({ status: res.statusCode ?? 0, headers: { ...flat(res.headers), ...flat(res.trailers) }, records: parsed.records, sseTerminal: parsed.sseTerminal, closedEarly });
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

function parse(text: string): { records: unknown[]; sseTerminal: boolean } {
  const json = (s: string): unknown => {
    try {
      return codecs.json.decode(new TextEncoder().encode(s));
    } catch {
      return { unparsable: s };
    }
  };
  if (!/^(data|event):/m.test(text)) return { records: text.split('\n').filter((l) => l.trim() !== '').map(json), sseTerminal: false };
  let sseTerminal = false;
  const records = text
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((event) => {
      const lines = event.split('\n');
      if (lines.some((l) => l === 'event: terminal')) sseTerminal = true;
      return json(lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice('data: '.length)).join('\n'));
    });
  return { records, sseTerminal };
}
