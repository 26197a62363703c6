import type { ServerResponse } from 'node:http';
import type { CallOutlet, CommandEnd, Identity, Logger } from '../../dispatcher/index.js';
import { jsonText, type RpcError } from '../../protocol/index.js';
import { classify, resultRecord, errorFields, execResultRecord, type ResultRecord } from '../../outcome/index.js';
import { eventId, RESUME_MS_HEADER, RESUME_TOKEN_HEADER } from './resume.js';
import { Responder, type StreamFormat } from './responder.js';
import { ARCHIVE_BYTES_TRAILER, ARCHIVE_SHA256_TRAILER, ERROR_TRAILER } from './raw-tar.js';

/** A call's last record: the error that ended it, if one did, and the result record, with its text. */
export interface Ending {
  readonly error: RpcError | undefined;
  readonly record: ResultRecord;
  readonly text: string;
}

/**
 * One call over plain HTTP (spec §5.6), as it outlives the requests that answer it: a
 * resumable call is answered by its first request and then by each one that resumes
 * it (HTTP-7). What its result record needs is counted here, once per value, whichever
 * request sends the value and however many times.
 */
export class HttpCall {
  /** Values produced so far: for a resumable call, its last sequence number. */
  private values = 0;
  /** What the terminal frame of a command reported (EXEC-1). */
  private commandEnded: CommandEnd | undefined;
  /** The resume token and the grace granted, when the call is resumable (HTTP-6). */
  token: string | undefined;
  graceMs = 0;
  /** Ends the request now answering the call, unless its answer has ended: a resume takes the call from it. */
  abandon: (() => void) | undefined;

  constructor(
    readonly id: string,
    readonly operationId: string,
    readonly streaming: boolean,
    /** An operation that runs a command reports its exit status, as the CLI does. */
    private readonly commandEnd: ((item: unknown) => CommandEnd | undefined) | undefined,
  ) {}

  /** A value as it is encoded: counted the first time its number is seen (`seq`, on a resumable call). */
  saw(output: unknown, seq: number | undefined): void {
    const n = seq ?? this.values + 1;
    if (n <= this.values) return;
    this.values = n;
    this.commandEnded = this.commandEnd?.(output) ?? this.commandEnded;
  }

  /** The call's last record, as text now: an answer JSON cannot carry fails here, as the call's INTERNAL error. */
  ending(error: RpcError | undefined, output?: unknown): Ending {
    const base = { command: this.commandEnd ? 'exec' : 'call', operation: this.operationId, call_id: this.id, events_seen: this.values } as const;
    let record: ResultRecord;
    if (this.commandEnd) {
      // As the CLI and the Lab: one result record rule for a command's end.
      record = execResultRecord({ ...base, end: this.commandEnded, failure: error ? { classified: classify(error), error } : undefined });
    } else if (error) {
      const classified = classify(error);
      record = resultRecord({ ...base, outcome: classified.outcome, failure_boundary: classified.boundary, ...errorFields(error, classified.outcome) });
    } else {
      record = resultRecord({ ...base, outcome: 'success', failure_boundary: 'none', ...(this.streaming ? {} : { output }) });
    }
    return { error, record, text: jsonText(record) };
  }

  /** The headers a resumable call's streams carry (HTTP-6). */
  resumeHeaders(): Record<string, string> {
    return this.token === undefined ? {} : { [RESUME_TOKEN_HEADER]: this.token, [RESUME_MS_HEADER]: String(this.graceMs) };
  }
}

/** What one request's answer needs besides its call. */
export interface AnswerOptions {
  readonly format: StreamFormat;
  readonly identity: Identity | null;
  readonly logger: Logger | undefined;
  /** The body was never read: the connection cannot carry another request. */
  readonly bodyUnread: boolean;
  /** A resume: the answer is a stream even when all it has left is the end (HTTP-7). */
  readonly resumed: boolean;
  /** The HTTP status an error the operation declares maps to (its contract's `httpStatus`): a raw tar answer's, before its first byte (ARC-8). */
  readonly declaredStatus?: (code: string) => number | undefined;
}

/** The answer a call's events become: a stream's line, or what the result record needs. */
type Piece =
  | { readonly byteLength: number; readonly line: Buffer }
  | { readonly byteLength: 0; readonly admitted: true }
  | { readonly byteLength: 0; readonly end: Ending }
  | { readonly byteLength: 0 };

const NOTHING: Piece = { byteLength: 0 };
const ADMITTED: Piece = { byteLength: 0, admitted: true };

/**
 * One request's answer to its call: the outlet the call engine writes to (no frames:
 * a value is a line or an event, the end is the result record), until the call ends or the
 * request goes away.
 */
export class HttpAnswer {
  readonly responder: Responder;
  readonly outlet: CallOutlet<Piece>;
  /** Called when the call grants more input credit: a raw tar body reads on (ARC-9). */
  inputGranted: (() => void) | undefined;
  private done = false;
  /** A raw tar answer's terminal frame (ARC-6), for its trailers. */
  private terminal: { bytes: number; sha256: string } | undefined;

  constructor(
    private readonly call: HttpCall,
    private readonly res: ServerResponse,
    private readonly options: AnswerOptions,
  ) {
    const connection = options.bodyUnread ? { connection: 'close' } : {};
    this.responder = new Responder(res, options.format, call.id, () => ({ ...call.resumeHeaders(), ...connection }));
    this.outlet = {
      encode: (event) => {
        switch (event.type) {
          case 'resumable':
            call.token = event.token;
            call.graceMs = event.graceMs;
            return NOTHING;
          case 'credit':
            if (event.bytes > 0) this.inputGranted?.();
            // A raw tar answer's headers wait for its first byte, so an error before it keeps its HTTP status (ARC-8).
            if (options.format === 'tar') return NOTHING;
            // The first says the call was admitted, after its token if it has one: a stream whose token
            // comes late (a gateway's, from its host, §4.9) starts here, its headers carrying the token.
            return call.streaming ? ADMITTED : NOTHING;
          case 'resumed':
            return NOTHING; // the body was the whole input; the socket paces the output (HTTP-2)
          case 'output': {
            call.saw(event.output, event.seq);
            if (event.final) return { byteLength: 0, end: call.ending(undefined, event.output) };
            if (options.format === 'tar') return this.tarPiece(event.output);
            const id = call.token !== undefined && event.seq !== undefined ? eventId(call.token, event.seq) : undefined;
            const line = this.responder.line(event.output, id);
            return { byteLength: line.byteLength, line };
          }
          case 'completed':
            return { byteLength: 0, end: call.ending(undefined) };
          case 'error':
            return { byteLength: 0, end: call.ending(event.error) };
        }
      },
      send: (piece) => {
        if (this.done) return Promise.resolve();
        try {
          if ('line' in piece) return this.responder.write(piece.line);
          if ('end' in piece) this.finish(piece.end);
          if ('admitted' in piece) this.responder.startStream();
        } catch (error) {
          // Writing to a response that broke under us: it ends this request, not the server.
          options.logger?.warn('an HTTP answer could not be written', { operation: call.operationId, error: String(error) });
          res.destroy();
        }
        return Promise.resolve();
      },
    };
  }

  get ended(): boolean {
    return this.done;
  }

  /** A raw tar answer, whose headers wait for its first byte (ARC-8). */
  get raw(): boolean {
    return this.options.format === 'tar';
  }

  /** The request went away before its answer ended: nothing more is written. False when it had ended already. */
  close(): boolean {
    if (this.done) return false;
    this.done = true;
    return true;
  }

  /** Another request takes the call: this one, if still open, is ended at once (its reader is gone or lost the race). */
  abandon(): void {
    if (this.close()) this.res.destroy();
  }

  /** A get's item in a raw tar answer: its tar bytes as they are; the stat goes nowhere, the terminal frame to the trailers. */
  private tarPiece(output: unknown): Piece {
    const item = output as { data?: Uint8Array; terminal?: true; bytes?: number; sha256?: string };
    if (item.data) {
      const line = Buffer.from(item.data.buffer, item.data.byteOffset, item.data.byteLength);
      return { byteLength: line.byteLength, line };
    }
    if (item.terminal) this.terminal = { bytes: item.bytes!, sha256: item.sha256! };
    return NOTHING;
  }

  /** The call's end: the result record last on a stream, or the whole answer with its status. */
  finish({ error, record, text }: Ending): void {
    if (this.done) return;
    this.done = true;
    if (this.raw) return this.finishTar({ error, record, text });
    const endId = this.call.token === undefined ? undefined : eventId(this.call.token, 'end');
    if (this.responder.headersSent || this.options.resumed) return this.responder.endStream(record, text, endId);
    this.whole(statusOf(error, this.options.identity), error, record, text);
  }

  /** The whole answer in one body, with the headers its status and error call for. */
  private whole(status: number, error: RpcError | undefined, record: ResultRecord, text: string): void {
    this.responder.whole(status, record, { ...retryAfter(error), ...(status === 401 ? { 'www-authenticate': 'Bearer' } : {}), ...(this.options.bodyUnread ? { connection: 'close' } : {}) }, text);
  }

  /**
   * A raw tar answer's end (ARC-8): before its first byte, an error is the whole answer
   * with the status its code maps to; after, the body ends and the trailers say how: the
   * terminal frame's count and digest for a whole copy, the error for one cut short.
   */
  private finishTar({ error, record, text }: Ending): void {
    if (!this.responder.headersSent && error) return this.whole(tarErrorStatus(error, this.options), error, record, text);
    const trailers = error
      ? { [ERROR_TRAILER]: headerSafe(`${error.code}: ${error.message}`) }
      : this.terminal
        ? { [ARCHIVE_BYTES_TRAILER]: String(this.terminal.bytes), [ARCHIVE_SHA256_TRAILER]: this.terminal.sha256 }
        : {};
    this.responder.endTar(record, trailers);
  }
}

/** A raw tar answer's error before its first byte: the operation's declared status, HTTP's own for the machinery's codes. */
function tarErrorStatus(error: RpcError, options: AnswerOptions): number {
  const status = statusOf(error, options.identity);
  if (status !== 200) return status;
  return options.declaredStatus?.(error.code) ?? MACHINERY_STATUS[error.code] ?? 500;
}

const MACHINERY_STATUS: Record<string, number> = { INVALID_INPUT: 400, NOT_FOUND: 404, TIMEOUT: 504, PAYLOAD_TOO_LARGE: 413 };

/** A trailer carries printable ASCII only: anything else (a container's own names may hold control characters) is escaped. */
function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).slice(0, 4096);
}

/**
 * 200 for every outcome the operation's call produced; the refusals of the server's
 * own machinery keep their HTTP meaning (spec §5.6).
 */
function statusOf(error: RpcError | undefined, identity: Identity | null): number {
  if (!error) return 200;
  if (error.code === 'FORBIDDEN') return identity === null ? 401 : 403;
  if (error.code === 'UNAVAILABLE') return 503;
  if (error.code === 'LIMIT_EXCEEDED') return 429;
  return 200;
}

function retryAfter(error: RpcError | undefined): Record<string, string> {
  return error?.retryable && (error.code === 'UNAVAILABLE' || error.code === 'LIMIT_EXCEEDED') ? { 'retry-after': '1' } : {};
}
