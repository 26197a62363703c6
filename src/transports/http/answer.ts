import type { ServerResponse } from 'node:http';
import type { CallOutlet, CommandEnd, Identity, Logger } from '../../dispatcher/index.js';
import { jsonText, type RpcError } from '../../protocol/index.js';
import { classify, resultRecord, errorFields, execResultRecord, type ResultRecord } from '../../outcome/index.js';
import { eventId, RESUME_MS_HEADER, RESUME_TOKEN_HEADER } from './resume.js';
import { Responder, type StreamFormat } from './responder.js';

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
  private done = false;

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
            // The first says the call was admitted, after its token if it has one: a stream whose token
            // comes late (a gateway's, from its host, §4.9) starts here, its headers carrying the token.
            return call.streaming ? ADMITTED : NOTHING;
          case 'resumed':
            return NOTHING; // the body was the whole input; the socket paces the output (HTTP-2)
          case 'output': {
            call.saw(event.output, event.seq);
            if (event.final) return { byteLength: 0, end: call.ending(undefined, event.output) };
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

  /** The call's end: the result record last on a stream, or the whole answer with its status. */
  finish({ error, record, text }: Ending): void {
    if (this.done) return;
    this.done = true;
    const endId = this.call.token === undefined ? undefined : eventId(this.call.token, 'end');
    if (this.responder.headersSent || this.options.resumed) return this.responder.endStream(record, text, endId);
    const status = statusOf(error, this.options.identity);
    this.responder.whole(status, record, { ...retryAfter(error), ...(status === 401 ? { 'www-authenticate': 'Bearer' } : {}), ...(this.options.bodyUnread ? { connection: 'close' } : {}) }, text);
  }
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
