import type { IncomingMessage } from 'node:http';
import type { LiveCall } from '../../dispatcher/index.js';
import { codecs, RpcError } from '../../protocol/index.js';
import { CallerInputError } from '../../outcome/index.js';

/**
 * Archives as raw tar over plain HTTP (spec §12 "Archives", ARC-8, ARC-9): `curl … | tar x` and
 * `curl -T file.tar`, the tar bytes themselves as the body, the copy's end in trailers.
 */
export const TAR_MEDIA_TYPE = 'application/x-tar';
/** The one operation whose answer may be raw tar, and the one whose input stream may be a raw tar body. */
export const TAR_OUT_OPERATION = 'docker/container/archive/get';
export const TAR_IN_OPERATION = 'docker/container/archive/put';
/** The trailers of a raw tar answer: the terminal frame's count and digest (ARC-6), or why the copy ended short. */
export const ARCHIVE_BYTES_TRAILER = 'X-Callwire-Archive-Bytes';
export const ARCHIVE_SHA256_TRAILER = 'X-Callwire-Archive-Sha256';
export const ERROR_TRAILER = 'X-Callwire-Error';
/** The query parameter that carries a raw tar put's input, as JSON. */
export const INPUT_PARAMETER = 'input';

/** The caller asked for the answer as raw tar. */
export function wantsTar(accept: string | undefined): boolean {
  return /(^|[\s,])application\/x-tar\b/i.test(accept ?? '');
}

/** The request body is raw tar. */
export function sendsTar(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase() === TAR_MEDIA_TYPE;
}

/**
 * A raw tar put's input: the `input` query parameter, JSON (percent-encoded, so a path
 * is a value, never part of the URL's path, ARC-1). Its size is the URL's, which Node's
 * header bound (16 KiB) holds; its nesting is held as a body's is (LIM-2).
 */
export function queryInput(url: string | undefined, maxNestingDepth: number): { input: unknown; bytes: number } | CallerInputError {
  const text = new URL(url ?? '/', 'http://x').searchParams.get(INPUT_PARAMETER);
  if (text === null) return new CallerInputError(`an ${TAR_MEDIA_TYPE} body takes the call's input as the query parameter "${INPUT_PARAMETER}" (JSON, percent-encoded)`);
  const bytes = Buffer.from(text);
  try {
    return { input: codecs.json.decode(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), maxNestingDepth), bytes: bytes.byteLength };
  } catch (error) {
    return new CallerInputError(`the query parameter "${INPUT_PARAMETER}" is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Feeds a raw tar body to a call's input stream as `{data}` items, under its input
 * credit (CR-2): the request is paused while the call has granted nothing more, so the
 * server holds at most the input window of it, whatever the body's size. A body that
 * sends nothing for `idleMs` while it may ends the call with TIMEOUT (a slow or stalled
 * caller costs a bounded time per byte, never memory). Returns what a grant of input
 * credit calls.
 */
export function pumpTarBody(req: IncomingMessage, call: LiveCall, idleMs: number): () => void {
  let timer: NodeJS.Timeout | undefined;
  const quiet = (): void => clearTimeout(timer);
  const arm = (): void => {
    quiet();
    timer = setTimeout(() => {
      stop();
      call.terminate(RpcError.of('TIMEOUT', `the tar body sent nothing for ${idleMs} ms`));
    }, idleMs);
  };
  const flow = (): void => {
    if (call.ended) return stop();
    if (!req.isPaused() || !call.input?.hasCredit) return;
    arm();
    req.resume();
  };
  const onData = (chunk: Buffer): void => {
    if (call.ended) return stop();
    call.pushInput({ data: chunk }, chunk.byteLength);
    if (call.input?.hasCredit) return arm();
    quiet();
    req.pause();
  };
  const onEnd = (): void => {
    stop();
    call.endInput();
  };
  function stop(): void {
    quiet();
    req.off('data', onData).off('end', onEnd);
  }
  // Nothing is read before the call has granted its first credit.
  req.pause();
  req.on('data', onData).once('end', onEnd).once('close', quiet);
  flow();
  return flow;
}
