import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { checkAccess, type CallOutlet, type CallTable, type CommandEnd, type Dispatcher, type Identity } from '../../dispatcher/index.js';
import { ENVELOPE_LEVELS, jsonText, RpcError } from '../../protocol/index.js';
import { CallerInputError, classify, envelope, errorFields, execEnvelope, type Classified, type TerminalEnvelope } from '../../outcome/index.js';
import { bearerToken } from '../auth.js';
import { requestPath } from '../request-path.js';
import { checkBrowserRequest, SAME_ORIGIN_ONLY, type OriginPolicy } from '../origin.js';
import { BodyRefusal, readInput } from './body.js';
import { Responder, streamFormat, EXIT_CODE_HEADER, CALL_ID_HEADER } from './responder.js';

export interface HttpCallsOptions {
  readonly dispatcher: Dispatcher;
  readonly originPolicy?: OriginPolicy;
  /** How long a request body may take to arrive (spec §5.6). Default 5 s. */
  readonly bodyDeadlineMs?: number;
}

/** `POST /call/<operationId>` (spec §5.6). */
export const CALL_PATH = '/call/';
export const DEADLINE_HEADER = 'X-Callwire-Deadline-Ms';
const DEFAULT_BODY_DEADLINE_MS = 5000;

/**
 * Calls over plain HTTP, for curl and fetch: one request is one call, run through
 * a session of its own with the same auth, origin rules, limits and validation as
 * a WebSocket call. Returns a request handler that answers `true` for requests it
 * took (paths under /call/), `false` for others.
 */
export function createHttpCalls(options: HttpCallsOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { dispatcher } = options;
  const policy = options.originPolicy ?? SAME_ORIGIN_ONLY;
  const bodyDeadlineMs = options.bodyDeadlineMs ?? DEFAULT_BODY_DEADLINE_MS;

  return (req, res) => {
    const path = requestPath(req.url);
    if (path === undefined || !path.startsWith(CALL_PATH)) return false;
    const operationId = safeDecode(path.slice(CALL_PATH.length));
    const refuse = (status: number, classified: Classified, code: string, message: string, headers: Record<string, string> = {}): true => {
      const answer = envelope({ command: dispatcher.registry.lookup(operationId)?.commandEnd ? 'exec' : 'call', outcome: classified.outcome, failure_boundary: classified.boundary, operation: operationId || '(none)', call_id: null, events_seen: 0, diagnostics: [{ code, message }] });
      // The body was not read: this connection cannot carry another request.
      new Responder(res, 'ndjson', '').whole(status, answer, { connection: 'close', ...headers });
      return true;
    };

    const verdict = checkBrowserRequest(policy, req.headers.origin, req.headers.host);
    if (!verdict.ok) return refuse(403, { outcome: 'forbidden', boundary: 'validation' }, 'FORBIDDEN', verdict.reason);
    const cors = corsHeaders(req);
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'access-control-allow-methods': 'POST', 'access-control-allow-headers': `content-type, authorization, accept, ${DEADLINE_HEADER}`, 'access-control-max-age': '600' }).end();
      return true;
    }
    if (req.method !== 'POST') return refuse(405, { outcome: 'invalid_input', boundary: 'input' }, 'METHOD_NOT_ALLOWED', `use POST ${CALL_PATH}<operation>`, { allow: 'POST, OPTIONS', ...cors });
    if (!dispatcher.accepting) return refuse(503, { outcome: 'infrastructure_failure', boundary: 'connect' }, 'UNAVAILABLE', 'the server is shutting down', { 'retry-after': '1', ...cors });
    let identity: Identity | null = dispatcher.anonymousIdentity;
    const token = bearerToken(req.headers.authorization);
    if (token !== undefined) {
      const found = dispatcher.authenticate?.(token);
      // The token itself is never echoed.
      if (!found) return refuse(401, { outcome: 'forbidden', boundary: 'validation' }, 'FORBIDDEN', 'invalid token', { 'www-authenticate': 'Bearer', ...cors });
      identity = found;
    }
    const deadline = parseDeadline(req.headers[DEADLINE_HEADER.toLowerCase()]);
    if (deadline instanceof CallerInputError) return refuse(400, { outcome: 'invalid_input', boundary: 'input' }, 'INVALID_INPUT', deadline.message, cors);

    const call = { operationId, deadline, identity, cors };
    // HTTP-5: a call that the path and the identity refuse (REQ-2, REQ-4 come before its input is
    // looked at) is answered with its body unread, as if its input were null: a caller without a
    // token never has a byte of its body parsed.
    const op = dispatcher.registry.visible(operationId);
    if (!op || checkAccess(op.access, identity)) return startCall(dispatcher, req, res, { ...call, input: null, bytes: 0, bodyUnread: true }, refuse);

    // A client that asks first (curl does for large bodies) hears 100 Continue only once the headers pass.
    const sendContinue = (): void => {
      if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue();
    };
    const bounds = { maxBytes: dispatcher.limits.maxInputBytes, maxNestingDepth: dispatcher.limits.maxNestingDepth - ENVELOPE_LEVELS, deadlineMs: bodyDeadlineMs };
    void readInput(req, bounds, sendContinue).then(
      ({ input, bytes }) => startCall(dispatcher, req, res, { ...call, input, bytes, bodyUnread: false }, refuse),
      (error: unknown) => {
        if (!(error instanceof BodyRefusal)) return; // the client went away: nobody to answer
        const classified: Classified = error.status === 408 ? { outcome: 'timeout', boundary: 'input' } : { outcome: 'invalid_input', boundary: 'input' };
        const code = { 400: 'INVALID_INPUT', 408: 'TIMEOUT', 413: 'PAYLOAD_TOO_LARGE', 415: 'UNSUPPORTED_MEDIA_TYPE' }[error.status];
        void refuse(error.status, classified, code, error.message, cors);
      },
    );
    return true;
  };
}

interface CallRequest {
  readonly operationId: string;
  readonly input: unknown;
  /** The body's size; readInput held it to maxInputBytes. */
  readonly bytes: number;
  readonly deadline: number | undefined;
  readonly identity: Identity | null;
  readonly cors: Record<string, string>;
  /** The body was never read: the connection cannot carry another request. */
  readonly bodyUnread: boolean;
}

type Refuse = (status: number, classified: Classified, code: string, message: string, headers?: Record<string, string>) => true;

/** Runs a call; whatever its start throws (the server began shutting down meanwhile) ends this request, never the server. */
function startCall(dispatcher: Dispatcher, req: IncomingMessage, res: ServerResponse, call: CallRequest, refuse: Refuse): true {
  try {
    runCall(dispatcher, req, res, call);
  } catch (thrown) {
    const error = thrown instanceof RpcError ? thrown : new RpcError('INTERNAL', thrown instanceof Error ? thrown.message : String(thrown));
    dispatcher.logger?.warn('an HTTP call failed to start', { operation: call.operationId, error: error.message });
    if (res.headersSent) res.destroy();
    else refuse(error.code === 'UNAVAILABLE' ? 503 : 500, classify(error), error.code, error.message, call.cors);
  }
  return true;
}

/** The answer a call's events become: a stream's line, or what the terminal record needs. */
type Piece =
  | { readonly byteLength: number; readonly line: Buffer }
  | { readonly byteLength: 0; readonly end: Ending }
  | { readonly byteLength: 0 };

/** A call's last record: the error that ended it, if one did, and the envelope, with its text. */
interface Ending {
  readonly error: RpcError | undefined;
  readonly terminal: TerminalEnvelope;
  readonly text: string;
}

const tables = new WeakMap<Socket, CallTable>();

/**
 * The calls of one HTTP connection: a keep-alive connection carries its requests' calls
 * one after another, as a WebSocket carries its calls, and its closing cancels any left.
 */
function callsOf(dispatcher: Dispatcher, socket: Socket): CallTable {
  const known = tables.get(socket);
  if (known && !known.isClosed) return known;
  const table = dispatcher.connect();
  tables.set(socket, table);
  socket.once('close', () => table.close());
  return table;
}

/** Runs one request as a call, straight on the call engine (no frames), and answers it. */
function runCall(dispatcher: Dispatcher, req: IncomingMessage, res: ServerResponse, call: CallRequest): void {
  const { operationId, cors } = call;
  const id = randomUUID();
  const op = dispatcher.registry.lookup(operationId);
  const streaming = op?.kind === 'subscription';
  // An operation that runs a command reports its exit status, as the CLI does.
  const commandEnd = op?.commandEnd;
  const command = commandEnd ? 'exec' : 'call';
  for (const [name, value] of Object.entries(cors)) res.setHeader(name, value);
  if (Object.keys(cors).length > 0) res.setHeader('access-control-expose-headers', `${EXIT_CODE_HEADER}, ${CALL_ID_HEADER}`);
  const responder = new Responder(res, streamFormat(req.headers.accept), id);
  let events = 0;
  let done = false;
  let ended: CommandEnd | undefined;

  /** The call's last record, as text now: an answer JSON cannot carry fails here, as the call's INTERNAL error. */
  const ending = (error: RpcError | undefined, output?: unknown): Ending => {
    const base = { command, operation: operationId, call_id: id, events_seen: events } as const;
    let terminal: TerminalEnvelope;
    if (commandEnd) {
      // As the CLI and the Lab: one envelope rule for a command's end.
      terminal = execEnvelope({ ...base, end: ended, failure: error ? { classified: classify(error), error } : undefined });
    } else if (error) {
      const classified = classify(error);
      terminal = envelope({ ...base, outcome: classified.outcome, failure_boundary: classified.boundary, ...errorFields(error, classified.outcome) });
    } else {
      terminal = envelope({ ...base, outcome: 'success', failure_boundary: 'none', ...(streaming ? {} : { output }) });
    }
    return { error, terminal, text: jsonText(terminal) };
  };

  const finish = ({ error, terminal, text }: Ending): void => {
    if (done) return;
    done = true;
    if (responder.headersSent) return responder.endStream(terminal, text);
    const status = statusOf(error, call.identity);
    responder.whole(status, terminal, { ...retryAfter(error), ...(status === 401 ? { 'www-authenticate': 'Bearer' } : {}), ...(call.bodyUnread ? { connection: 'close' } : {}) }, text);
  };

  const NOTHING: Piece = { byteLength: 0 };
  const outlet: CallOutlet<Piece> = {
    encode(event) {
      switch (event.type) {
        case 'credit':
        case 'resumable':
        case 'resumed':
          return NOTHING; // the body was the whole input; nothing to grant; HTTP calls are not resumed by frames
        case 'output': {
          events++;
          if (event.final) return { byteLength: 0, end: ending(undefined, event.output) };
          ended = commandEnd?.(event.output) ?? ended;
          const line = responder.line(event.output);
          return { byteLength: line.byteLength, line };
        }
        case 'completed':
          return { byteLength: 0, end: ending(undefined) };
        case 'error':
          return { byteLength: 0, end: ending(event.error) };
      }
    },
    send(piece) {
      if (done) return Promise.resolve();
      try {
        if ('line' in piece) return responder.write(piece.line);
        if ('end' in piece) finish(piece.end);
      } catch (error) {
        // Writing to a response that broke under us: it ends this request, not the server.
        dispatcher.logger?.warn('an HTTP answer could not be written', { operation: operationId, error: String(error) });
        res.destroy();
      }
      return Promise.resolve();
    },
  };
  const request = { id, payload: { operationId, input: call.input, ...(call.deadline === undefined ? {} : { deadline_ms: call.deadline }) }, sizeBytes: call.bytes };
  const started = callsOf(dispatcher, req.socket).start(request, call.identity, outlet);
  if (started instanceof RpcError) return finish(ending(started));
  // A client that goes away aborts its call, as a closed WebSocket does: an exec's process is killed.
  res.on('close', () => {
    if (!done) {
      done = true;
      started.cancel();
    }
  });
  // The body was the whole input: an operation that also takes an input stream gets its end at once.
  if (started.input) started.endInput();
  if (streaming && !done) responder.startStream();
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

function parseDeadline(header: string | string[] | undefined): number | undefined | CallerInputError {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header[0]! : header;
  const ms = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(ms) || ms <= 0) return new CallerInputError(`${DEADLINE_HEADER} must be a whole number of milliseconds above 0, not "${text}"`);
  return ms;
}

/** A page of an allowed origin may read the answer (the origin itself was checked already). */
function corsHeaders(req: IncomingMessage): Record<string, string> {
  const origin = req.headers.origin;
  return origin ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {};
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
