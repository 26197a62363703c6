import type { ClientRequest, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { RpcError } from '../../protocol/index.js';
import type { DockerEngine } from './engine.js';
import { ItemTooLarge, jsonArrayItems } from './json-array-items.js';

/**
 * Requests to the engine whose answers a caller or a container can grow (spec §12,
 * DOCKER-2): a log, an inspect document, a list. docker-modem reads every answer it is
 * not told is a stream into one buffer, then one string, in its own `res.on('end')`: a
 * 600 MiB log cost ~3.9x its size, and one over 512 MiB threw ERR_STRING_TOO_LONG
 * where no call could catch it, ending the process. Here every answer is the engine's
 * response itself, read as it comes: a stream the call pulls under its credit, or JSON
 * read up to a bound, past which the call ends with DOCKER_ERROR.
 */
export interface EngineGet {
  /** `/containers/<id>/logs`: a reference in it must already be one encoded segment. */
  readonly path: string;
  readonly query?: Record<string, string | number | boolean | undefined>;
}

/** An engine answer other than 2xx, shaped as dockerode's errors, so errors.ts maps it the same way. */
class EngineStatusError extends Error {
  constructor(
    readonly statusCode: number,
    readonly json: { message?: string } | null,
  ) {
    super(`(HTTP code ${statusCode}) - ${json?.message ?? 'no message'}`);
  }
}

/** What of an error answer is read: the engine's `{"message": …}`, never a body of any size. */
const MAX_ERROR_BYTES = 64 * 1024;

/** Every status is handed back as a response: docker-modem then never buffers a body (its getCause reads error bodies whole). */
const EVERY_STATUS: Record<number, boolean> = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [i + 100, true]));

/** The engine's response to a request, once its headers are in (docker-modem's 60 s bounds the wait); a non-2xx status rejects. */
async function openGet(engine: DockerEngine, request: EngineGet, method: 'GET' | 'HEAD' = 'GET'): Promise<IncomingMessage> {
  return answered(await dial(engine, request, { method }));
}

/** The engine's response, whatever its status; `file` is a request body docker-modem pipes in. */
function dial(engine: DockerEngine, request: EngineGet, extra: { method: string; file?: Readable; headers?: Record<string, string> }): Promise<IncomingMessage> {
  const query = Object.fromEntries(Object.entries(request.query ?? {}).filter(([, v]) => v !== undefined));
  return new Promise<IncomingMessage>((resolve, reject) => {
    engine.docker.modem.dial({ path: `${request.path}?`, isStream: true, statusCodes: EVERY_STATUS, options: query, ...extra }, (error, answer) => {
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve(answer as IncomingMessage);
    });
  });
}

/** A 2xx response as it is; any other status read up to MAX_ERROR_BYTES and thrown as the engine's error. */
async function answered(response: IncomingMessage): Promise<IncomingMessage> {
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) return response;
  const body = await readAtMost(response, MAX_ERROR_BYTES).catch(() => ({ bytes: Buffer.alloc(0), over: false }));
  response.destroy();
  throw new EngineStatusError(status, parseMessage(body.bytes));
}

/** The engine's answer to a HEAD: its status and headers (a 2xx; any other rejects as an engine error). */
export async function engineHead(engine: DockerEngine, request: EngineGet): Promise<IncomingMessage> {
  const response = await openGet(engine, request, 'HEAD');
  response.destroy();
  return response;
}

/**
 * A PUT whose body is `body`, written to the engine as it takes it (docker-modem pipes
 * it, so a body the engine does not read holds back whatever feeds `body`), with no
 * idle timeout: the body may wait for its own caller as long as that caller likes. The
 * engine's answer, once it comes (a refusal may come before the body ends: the request
 * is then cut). `signal`'s abort cuts the request.
 */
export async function engineUpload(engine: DockerEngine, request: EngineGet, body: Readable, signal: AbortSignal): Promise<IncomingMessage> {
  let sent: ClientRequest | undefined;
  const cut = (): void => {
    body.destroy();
    sent?.destroy();
  };
  const pipe = body.pipe.bind(body);
  // docker-modem hands its request to nobody but the body's pipe: the one place to lift its idle timeout and keep it for an abort.
  body.pipe = <T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T => {
    sent = destination as unknown as ClientRequest;
    sent.setTimeout(0);
    sent.once('socket', (socket) => socket.setTimeout(0));
    if (signal.aborted) cut();
    return pipe(destination, options);
  };
  if (signal.aborted) cut();
  signal.addEventListener('abort', cut, { once: true });
  try {
    const response = await dial(engine, request, { method: 'PUT', file: body, headers: { 'Content-Type': 'application/x-tar' } });
    // An answer before the whole body (a refusal): the rest is not sent.
    if (!body.readableEnded) sent?.destroy();
    return await answered(response);
  } finally {
    signal.removeEventListener('abort', cut);
  }
}

/**
 * A long-lived engine stream (a log, followed or not; events): the response, with no
 * idle timeout. The call pulls it under its credit, so a slow caller leaves it unread
 * as long as it likes, and a followed log or an event stream may be quiet for hours:
 * docker-modem's 60 s socket timeout, which it leaves on a stream, ended a quiet
 * `logs --follow` after exactly 60 s. The call's abort destroys it.
 */
export async function engineStream(engine: DockerEngine, request: EngineGet): Promise<IncomingMessage> {
  const response = await openGet(engine, request);
  withoutIdleTimeout(response);
  return response;
}

/** Lifts docker-modem's idle timeout off a stream it returned (a pull, events): the socket under it may be quiet for long. */
export function withoutIdleTimeout(stream: unknown): void {
  (stream as { socket?: { setTimeout?(ms: number): void } | null }).socket?.setTimeout?.(0);
}

/**
 * The engine's JSON answer to a GET, read up to `maxBytes` (the engine's idle timeout
 * still applies: nothing waits on the caller here). Larger ends the call with
 * DOCKER_ERROR, the process and its other calls unharmed.
 */
export async function engineJson<T>(engine: DockerEngine, request: EngineGet, maxBytes: number, what: string): Promise<T> {
  const response = await openGet(engine, request);
  const { bytes, over } = await readAtMost(response, maxBytes);
  response.destroy();
  if (over) throw answerTooLarge(what, maxBytes);
  // One string of at most maxBytes, parsed once: the cost is a small multiple of the bound, whatever the engine sent.
  try {
    return JSON.parse(bytes.toString('utf8')) as T;
  } catch {
    throw new RpcError('DOCKER_ERROR', `the engine's answer for ${what} is not JSON`, { details: {} });
  }
}

/**
 * An engine list (`/containers/json`, `/images/json`), read one element at a time and
 * kept as `project` makes each row: the engine's answer is never whole in memory, so
 * 10,000 containers of big labels cost the rows an operation keeps, and no more.
 * An element over `maxAnswerBytes`, or rows over it together (as JSON), end the call.
 */
export async function engineList<T>(engine: DockerEngine, request: EngineGet, what: string, project: (item: never) => T): Promise<T[]> {
  const response = await openGet(engine, request);
  const max = engine.maxAnswerBytes;
  const rows: T[] = [];
  let kept = 0;
  try {
    for await (const item of jsonArrayItems(response as AsyncIterable<Buffer>, max)) {
      const row = project(item as never);
      kept += Buffer.byteLength(JSON.stringify(row) ?? '');
      if (kept > max) throw answerTooLarge(what, max);
      rows.push(row);
    }
  } catch (error) {
    if (error instanceof ItemTooLarge) throw answerTooLarge(`one element of ${what}`, max);
    if (error instanceof RpcError || (error as { code?: string }).code !== undefined) throw error;
    throw new RpcError('DOCKER_ERROR', `the engine's answer for ${what} is not a JSON list: ${(error as Error).message}`, { details: {} });
  } finally {
    response.destroy();
  }
  return rows;
}

/** DOCKER-2: an engine answer over its bound. */
export function answerTooLarge(what: string, maxBytes: number): RpcError {
  return new RpcError('DOCKER_ERROR', `the engine's answer for ${what} is larger than ${formatBytes(maxBytes)}, the most this server reads (spec §12, DOCKER-2)`, { details: {} });
}

const formatBytes = (n: number): string => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);

/** The response's body up to `maxBytes`; `over` when it had more (then not read further, and `bytes` its first `maxBytes`). */
async function readAtMost(response: IncomingMessage, maxBytes: number): Promise<{ bytes: Buffer; over: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    if (size + chunk.byteLength > maxBytes) {
      chunks.push(chunk.subarray(0, maxBytes - size));
      return { bytes: Buffer.concat(chunks, maxBytes), over: true };
    }
    size += chunk.byteLength;
    chunks.push(chunk);
  }
  return { bytes: Buffer.concat(chunks, size), over: false };
}

function parseMessage(bytes: Buffer): { message?: string } | null {
  try {
    const parsed = JSON.parse(bytes.toString('utf8')) as { message?: unknown };
    return typeof parsed.message === 'string' ? { message: parsed.message } : null;
  } catch {
    const text = bytes.toString('utf8').trim();
    return text.length > 0 ? { message: text.slice(0, 1000) } : null;
  }
}
