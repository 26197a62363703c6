import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { checkAccess, type CallTable, type Dispatcher, type Identity, type LiveCall } from '../../dispatcher/index.js';
import { ENVELOPE_LEVELS, RpcError } from '../../protocol/index.js';
import { CallerInputError, classify, resultRecord, type Classified } from '../../outcome/index.js';
import { bearerToken } from '../auth.js';
import { requestPath } from '../request-path.js';
import { checkBrowserRequest, SAME_ORIGIN_ONLY, type OriginPolicy } from '../origin.js';
import { BodyRefusal, readInput } from './body.js';
import { HttpAnswer, HttpCall } from './answer.js';
import { Responder, streamFormat, EXIT_CODE_HEADER, CALL_ID_HEADER } from './responder.js';
import { pumpTarBody, queryInput, sendsTar, TAR_IN_OPERATION, TAR_MEDIA_TYPE, TAR_OUT_OPERATION } from './raw-tar.js';
import { LAST_EVENT_ID_HEADER, parseResumeMs, parseResumePosition, RESUME_AFTER_HEADER, RESUME_HEADER, RESUME_MS_HEADER, RESUME_TOKEN_HEADER, type ResumePosition } from './resume.js';

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
      const answer = resultRecord({ command: dispatcher.registry.lookup(operationId)?.commandEnd ? 'exec' : 'call', outcome: classified.outcome, failure_boundary: classified.boundary, operation: operationId || '(none)', call_id: null, events_seen: 0, diagnostics: [{ code, message }] });
      // The body was not read: this connection cannot carry another request.
      new Responder(res, 'ndjson', '').whole(status, answer, { connection: 'close', ...headers });
      return true;
    };

    const verdict = checkBrowserRequest(policy, req.headers.origin, req.headers.host);
    if (!verdict.ok) return refuse(403, { outcome: 'forbidden', boundary: 'validation' }, 'FORBIDDEN', verdict.reason);
    const cors = corsHeaders(req);
    if (req.method === 'OPTIONS') {
      const allowed = ['content-type', 'authorization', 'accept', DEADLINE_HEADER, RESUME_MS_HEADER, RESUME_HEADER, RESUME_AFTER_HEADER, LAST_EVENT_ID_HEADER].join(', ');
      res.writeHead(204, { ...cors, 'access-control-allow-methods': 'POST', 'access-control-allow-headers': allowed, 'access-control-max-age': '600' }).end();
      return true;
    }
    // ARC-9: `curl -T` sends a PUT; a PUT is taken for a raw tar put only (a page must ask first to send one, §10.1).
    const tarPut = req.method === 'PUT' && operationId === TAR_IN_OPERATION && sendsTar(req.headers['content-type']);
    if (req.method !== 'POST' && !tarPut) return refuse(405, { outcome: 'invalid_input', boundary: 'input' }, 'METHOD_NOT_ALLOWED', `use POST ${CALL_PATH}<operation>`, { allow: 'POST, OPTIONS', ...cors });
    if (!dispatcher.accepting) return refuse(503, { outcome: 'infrastructure_failure', boundary: 'connect' }, 'UNAVAILABLE', 'the server is shutting down', { 'retry-after': '1', ...cors });
    let identity: Identity | null = dispatcher.anonymousIdentity;
    const token = bearerToken(req.headers.authorization);
    if (token !== undefined) {
      const found = dispatcher.authenticate?.(token);
      // The token itself is never echoed; the refusal is audited as a call's is (its body unread: 0 bytes).
      if (!found) {
        dispatcher.refusedToken({ transport: 'http', operationId, requestBytes: 0 });
        return refuse(401, { outcome: 'forbidden', boundary: 'validation' }, 'FORBIDDEN', 'invalid token', { 'www-authenticate': 'Bearer', ...cors });
      }
      identity = found;
    }
    const deadline = parseDeadline(req.headers[DEADLINE_HEADER.toLowerCase()]);
    if (deadline instanceof CallerInputError) return refuse(400, { outcome: 'invalid_input', boundary: 'input' }, 'INVALID_INPUT', deadline.message, cors);
    const resumeMs = parseResumeMs(req.headers);
    if (resumeMs instanceof CallerInputError) return refuse(400, { outcome: 'invalid_input', boundary: 'input' }, 'INVALID_INPUT', resumeMs.message, cors);
    const position = parseResumePosition(req.headers);
    if (position instanceof CallerInputError) return refuse(400, { outcome: 'invalid_input', boundary: 'input' }, 'INVALID_INPUT', position.message, cors);
    // ARC-8: a raw tar answer is an archive's, and has no lines to count for a resume.
    if (streamFormat(req.headers.accept) === 'tar') {
      if (operationId !== TAR_OUT_OPERATION) return refuse(406, { outcome: 'invalid_input', boundary: 'input' }, 'NOT_ACCEPTABLE', `Accept: ${TAR_MEDIA_TYPE} is answered only by ${TAR_OUT_OPERATION}; ask for application/x-ndjson or text/event-stream`, cors);
      if (position || resumeMs !== undefined) return refuse(400, { outcome: 'invalid_input', boundary: 'input' }, 'INVALID_INPUT', `a ${TAR_MEDIA_TYPE} answer is not resumable: ask for NDJSON to resume a copy`, cors);
    }
    // HTTP-7: a resume is decided by its headers alone; its body is never read.
    if (position) return guarded(dispatcher, res, operationId, cors, refuse, () => resumeCall(dispatcher, req, res, { operationId, identity, cors, position }, refuse));

    const call = { operationId, deadline, resumeMs, identity, cors };
    // HTTP-5: a call that the path and the identity refuse (REQ-2, REQ-4 come before its input is
    // looked at) is answered with its body unread, as if its input were null: a caller without a
    // token never has a byte of its body parsed.
    const op = dispatcher.registry.visible(operationId);
    if (!op || checkAccess(op.access, identity)) return startCall(dispatcher, req, res, { ...call, input: null, bytes: 0, bodyUnread: true }, refuse);

    // A client that asks first (curl does for large bodies) hears 100 Continue only once the headers pass.
    const sendContinue = (): void => {
      if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue();
    };
    const depth = dispatcher.limits.maxNestingDepth - ENVELOPE_LEVELS;
    // ARC-9: a raw tar body is the put's input stream, read under its credit; its input comes in the query.
    if (sendsTar(req.headers['content-type'])) {
      const invalid = (message: string): true => refuse(400, { outcome: 'invalid_input', boundary: 'input' }, 'INVALID_INPUT', message, cors);
      if (operationId !== TAR_IN_OPERATION) return refuse(415, { outcome: 'invalid_input', boundary: 'input' }, 'UNSUPPORTED_MEDIA_TYPE', `a ${TAR_MEDIA_TYPE} body goes only to ${TAR_IN_OPERATION}; send application/json or application/msgpack`, cors);
      if (resumeMs !== undefined) return invalid(`a ${TAR_MEDIA_TYPE} body is not resumable: send the archive as the input stream of a WebSocket call to resume a copy`);
      const parsed = queryInput(req.url, depth);
      if (parsed instanceof CallerInputError) return invalid(parsed.message);
      sendContinue();
      return startCall(dispatcher, req, res, { ...call, ...parsed, bodyUnread: true, tarBodyIdleMs: bodyDeadlineMs }, refuse);
    }
    const bounds = { maxBytes: dispatcher.limits.maxInputBytes, maxNestingDepth: depth, deadlineMs: bodyDeadlineMs };
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
  /** The grace the caller asks its stream to outlive its connection by (HTTP-6). */
  readonly resumeMs: number | undefined;
  readonly identity: Identity | null;
  readonly cors: Record<string, string>;
  /** The body was never read: the connection cannot carry another request. */
  readonly bodyUnread: boolean;
  /** The body is a raw tar archive, the call's input stream, and may be quiet this long at most (ARC-9). */
  readonly tarBodyIdleMs?: number;
}

interface ResumeRequest {
  readonly operationId: string;
  readonly identity: Identity | null;
  readonly cors: Record<string, string>;
  readonly position: ResumePosition;
}

type Refuse = (status: number, classified: Classified, code: string, message: string, headers?: Record<string, string>) => true;

/** Runs a call; whatever its start throws (the server began shutting down meanwhile) ends this request, never the server. */
function startCall(dispatcher: Dispatcher, req: IncomingMessage, res: ServerResponse, call: CallRequest, refuse: Refuse): true {
  return guarded(dispatcher, res, call.operationId, call.cors, refuse, () => runCall(dispatcher, req, res, call));
}

function guarded(dispatcher: Dispatcher, res: ServerResponse, operationId: string, cors: Record<string, string>, refuse: Refuse, run: () => void): true {
  try {
    run();
  } catch (thrown) {
    const error = thrown instanceof RpcError ? thrown : new RpcError('INTERNAL', thrown instanceof Error ? thrown.message : String(thrown));
    dispatcher.logger?.warn('an HTTP call failed to start', { operation: operationId, error: error.message });
    if (res.headersSent) res.destroy();
    else refuse(error.code === 'UNAVAILABLE' ? 503 : 500, classify(error), error.code, error.message, cors);
  }
  return true;
}

/**
 * HTTP answers output as the socket takes it (HTTP-2), never waiting for a credit it
 * has no way to be sent; a resumable call is a stream under credit (§4.9), so an
 * HTTP one is granted all of it.
 */
const ALL_CREDIT = Number.POSITIVE_INFINITY;

const tables = new WeakMap<Socket, CallTable>();
/** The HTTP side of each call HTTP started: what a request that resumes it needs (HTTP-7). */
const httpCalls = new WeakMap<LiveCall, HttpCall>();

/**
 * The calls of one HTTP connection: a keep-alive connection carries its requests' calls
 * one after another, as a WebSocket carries its calls, and its closing cancels any left.
 * HTTP has no close that says the caller is done (HTTP-10): a closed connection is a
 * lost one, whose resumable calls wait for their grace.
 */
function callsOf(dispatcher: Dispatcher, socket: Socket): CallTable {
  const known = tables.get(socket);
  if (known && !known.isClosed) return known;
  // HTTP-8: an HTTP reader never acknowledges output.
  const table = dispatcher.connect(undefined, { unacknowledgedOutput: true });
  tables.set(socket, table);
  socket.once('close', () => table.close('lost'));
  return table;
}

/** Sets the headers every answer of a call carries: CORS, and which of them a page may read. */
function setCors(res: ServerResponse, cors: Record<string, string>): void {
  for (const [name, value] of Object.entries(cors)) res.setHeader(name, value);
  if (Object.keys(cors).length > 0) res.setHeader('access-control-expose-headers', [EXIT_CODE_HEADER, CALL_ID_HEADER, RESUME_TOKEN_HEADER, RESUME_MS_HEADER].join(', '));
}

/**
 * A request whose answer has not ended goes away: HTTP-4 aborts its call, unless the
 * call is resumable (HTTP-10): then its connection is lost, and the call waits for a
 * resume within its grace.
 */
function watch(res: ServerResponse, answer: HttpAnswer, call: LiveCall, table: CallTable): void {
  res.on('close', () => {
    if (!answer.close()) return;
    if (call.resumable) table.close('lost');
    else call.cancel();
  });
}

/** Runs one request as a call, straight on the call engine (no frames), and answers it. */
function runCall(dispatcher: Dispatcher, req: IncomingMessage, res: ServerResponse, request: CallRequest): void {
  const { operationId, cors } = request;
  const op = dispatcher.registry.lookup(operationId);
  const call = new HttpCall(randomUUID(), operationId, op?.kind === 'subscription', op?.commandEnd);
  setCors(res, cors);
  const declaredStatus = (code: string): number | undefined => op?.errors?.[code]?.httpStatus;
  const answer = new HttpAnswer(call, res, { format: streamFormat(req.headers.accept), identity: request.identity, logger: dispatcher.logger, bodyUnread: request.bodyUnread, resumed: false, declaredStatus });
  const payload = {
    operationId,
    input: request.input,
    ...(request.deadline === undefined ? {} : { deadline_ms: request.deadline }),
    ...(request.resumeMs === undefined ? {} : { resume: { grace_ms: request.resumeMs }, credit: ALL_CREDIT }),
  };
  const table = callsOf(dispatcher, req.socket);
  const started = table.start({ id: call.id, payload, sizeBytes: request.bytes }, request.identity, answer.outlet);
  if (started instanceof RpcError) return answer.finish(call.ending(started));
  httpCalls.set(started, call);
  call.abandon = () => answer.abandon();
  watch(res, answer, started, table);
  if (request.tarBodyIdleMs !== undefined) answer.inputGranted = pumpTarBody(req, started, request.tarBodyIdleMs);
  // The body was the whole input: an operation that also takes an input stream gets its end at once (numbered, on a resumable call).
  else if (started.input) started.endInput(started.resumable ? 1 : undefined);
  // A stream relayed from a fleet host has its token once the host admits it (§4.9): its headers
  // wait for that (the answer starts them at admission), or they could not carry it (HTTP-6).
  const tokenComesLater = request.resumeMs !== undefined && op?.kind === 'subscription' && op.resumeSeam !== undefined;
  // A raw tar answer starts with its first byte (ARC-8).
  if (call.streaming && !answer.ended && !tokenComesLater && !answer.raw) answer.responder.startStream();
}

/** How a refused resume ends, whatever the reason: as a connection lost for good (the CLI's exit 123 for an exec). */
const LOST: Classified = { outcome: 'infrastructure_failure', boundary: 'connect' };

/**
 * HTTP-7: takes up a resumable call after the values its caller has, on this request:
 * the values after them, the terminal event and the result record. HTTP-11: `end` says the
 * caller wants nothing more; its call is let go (aborted, when it still runs).
 */
function resumeCall(dispatcher: Dispatcher, req: IncomingMessage, res: ServerResponse, request: ResumeRequest, refuse: Refuse): void {
  const { operationId, identity, cors, position } = request;
  const registry = dispatcher.resumable;
  const named = registry.named(position.token);
  // Only a call HTTP started, on the path it was started on. No call has the empty id, so
  // any other token is refused below exactly as an unknown one is (HTTP-9).
  const call = named && named.op.name === operationId ? httpCalls.get(named) : undefined;
  const id = call?.id ?? '';
  const refused = (error: RpcError): void => {
    if (error.code === 'NOT_FOUND') void refuse(404, LOST, error.code, error.message, cors);
    // RSM-9: the call's own identity, without the access its start passed: refused as a call of it would be (HTTP-3), the call untouched.
    else if (error.code === 'FORBIDDEN') void refuse(403, classify(error), error.code, error.message, cors);
    // The engine's one refusal of a known call that is not retryable: what follows the position is gone (HTTP-8).
    else if (error.code === 'UNAVAILABLE' && !error.retryable) {
      void refuse(410, LOST, error.code, `${error.message}: an HTTP reader is given again at most the last ${dispatcher.limits.maxReplayBytesPerCall} bytes written to it`, cors);
    } else void refuse(error.code === 'LIMIT_EXCEEDED' ? 429 : 503, classify(error), error.code, error.message, { 'retry-after': '1', ...cors });
  };
  if (position.after === 'end') {
    const claimed = registry.claim(position.token, id, identity);
    registry.attempted({ token: position.token, id, identity, after: 'end', ...(claimed instanceof RpcError ? { error: claimed } : {}) });
    if (claimed instanceof RpcError) return refused(claimed);
    registry.forget(claimed);
    claimed.cancel();
    call?.abandon?.();
    res.writeHead(204, { ...cors, 'cache-control': 'no-store', connection: 'close' }).end();
    return;
  }
  setCors(res, cors);
  const answer = new HttpAnswer(call ?? new HttpCall(id, operationId, true, undefined), res, { format: streamFormat(req.headers.accept), identity, logger: dispatcher.logger, bodyUnread: true, resumed: true });
  const previous = call?.abandon;
  const table = callsOf(dispatcher, req.socket);
  const resumed = table.resume(id, { token: position.token, seq: position.after, credit: ALL_CREDIT }, identity, answer.outlet);
  if (resumed instanceof RpcError) {
    // A call that could not be given what its caller lacks was ended: whatever request still answers it ends too.
    if (resumed.code === 'UNAVAILABLE' && !resumed.retryable) previous?.();
    return refused(resumed);
  }
  // The request that answered the call until now has lost it: if its reader is still there, it hears nothing more.
  previous?.();
  if (call) call.abandon = () => answer.abandon();
  watch(res, answer, resumed, table);
  if (!answer.ended) answer.responder.startStream();
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
