import type { ServerResponse } from 'node:http';
import { jsonText } from '../../protocol/index.js';
import type { ResultRecord } from '../../outcome/index.js';
import { ARCHIVE_BYTES_TRAILER, ARCHIVE_SHA256_TRAILER, ERROR_TRAILER, TAR_MEDIA_TYPE, wantsTar } from './raw-tar.js';

/** How a streaming call's values go out: one JSON value per line, one Server-Sent Event each, or an archive's tar bytes themselves (ARC-8). */
export type StreamFormat = 'ndjson' | 'sse' | 'tar';

export const EXIT_CODE_HEADER = 'X-Callwire-Exit-Code';
export const CALL_ID_HEADER = 'X-Callwire-Call-Id';

/** Picks the stream format from Accept: raw tar or SSE when asked for, NDJSON otherwise. */
export function streamFormat(accept: string | undefined): StreamFormat {
  if (wantsTar(accept)) return 'tar';
  return /\btext\/event-stream\b/i.test(accept ?? '') ? 'sse' : 'ndjson';
}

const CONTENT_TYPES: Record<StreamFormat, string> = {
  ndjson: 'application/x-ndjson; charset=utf-8',
  sse: 'text/event-stream; charset=utf-8',
  tar: TAR_MEDIA_TYPE,
};
const TRAILERS: Record<StreamFormat, string> = {
  ndjson: EXIT_CODE_HEADER,
  sse: EXIT_CODE_HEADER,
  tar: [EXIT_CODE_HEADER, ARCHIVE_BYTES_TRAILER, ARCHIVE_SHA256_TRAILER, ERROR_TRAILER].join(', '),
};


/**
 * Writes one call's HTTP answer (spec §5.6): a unary call's result record as the whole
 * body; a stream's values as lines or events, each written once the socket has
 * taken the one before (the write's callback is the consumer's credit, §4.8), and
 * the result record last, with the exit code in a trailer as well as in the result record.
 */
export class Responder {
  private started = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly format: StreamFormat,
    private readonly callId: string,
    /** More headers for a stream, read when it starts (a resumable call's token, §5.6). */
    private readonly streamHeaders: () => Record<string, string> = () => ({}),
  ) {}

  get headersSent(): boolean {
    return this.started;
  }

  /** The stream was admitted: 200 and the stream's headers. */
  startStream(): void {
    if (this.started) return;
    this.started = true;
    this.res.writeHead(200, {
      'content-type': CONTENT_TYPES[this.format],
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      [CALL_ID_HEADER]: this.callId,
      trailer: TRAILERS[this.format],
      ...this.streamHeaders(),
    });
    // Headers now, not with the first value: a caller sees at once that its call runs.
    this.res.flushHeaders();
  }

  /** One streamed value as it goes on the wire: a line, or an event (with its `id:` when it has one, HTTP-6). */
  line(value: unknown, eventId?: string): Buffer {
    if (this.format === 'ndjson') return Buffer.from(`${jsonText(value)}\n`);
    return Buffer.from(`${eventId === undefined ? '' : `id: ${eventId}\n`}data: ${jsonText(value)}\n\n`);
  }

  /** Writes a line; resolves when the socket has taken it (the consumer's credit, §4.8). */
  write(line: Uint8Array): Promise<void> {
    this.startStream();
    return new Promise((resolve) => this.res.write(line, () => resolve()));
  }

  /** The last record of a stream; a stream that has sent nothing yet starts with it (a resume that has only the end to give). */
  endStream(record: ResultRecord, text = jsonText(record), eventId?: string): void {
    this.startStream();
    this.res.write(this.format === 'sse' ? `event: terminal\n${eventId === undefined ? '' : `id: ${eventId}\n`}data: ${text}\n\n` : `${text}\n`);
    this.res.addTrailers({ [EXIT_CODE_HEADER]: String(record.exit_code) });
    this.res.end();
  }

  /** The end of a raw tar answer (ARC-8): no record in the body, which is the archive; the copy's end in trailers. */
  endTar(record: ResultRecord, trailers: Record<string, string>): void {
    this.startStream();
    this.res.addTrailers({ [EXIT_CODE_HEADER]: String(record.exit_code), ...trailers });
    this.res.end();
  }

  /** The whole answer in one body: a unary call's, or a refusal's. */
  whole(status: number, record: ResultRecord, headers: Record<string, string> = {}, text = jsonText(record)): void {
    this.started = true;
    const body = `${text}\n`;
    this.res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      [EXIT_CODE_HEADER]: String(record.exit_code),
      ...(record.call_id ? { [CALL_ID_HEADER]: record.call_id } : {}),
      ...headers,
    });
    this.res.end(body);
  }
}
