import type { IncomingMessage } from 'node:http';
import { codecs, ProtocolError } from '../../protocol/index.js';

/** Why a request body was refused before any call: the HTTP status says which rule (spec §5.6). */
export class BodyRefusal extends Error {
  constructor(
    readonly status: 400 | 408 | 413 | 415,
    message: string,
  ) {
    super(message);
  }
}

const JSON_TYPES = new Set(['application/json']);
const MSGPACK_TYPES = new Set(['application/msgpack', 'application/x-msgpack', 'application/vnd.msgpack']);

/** What one request body may cost (spec §5.6, §9). */
export interface BodyBounds {
  readonly maxBytes: number;
  /** Maps and arrays the input may nest: a frame's `maxNestingDepth` less the envelope around an input (LIM-2). */
  readonly maxNestingDepth: number;
  readonly deadlineMs: number;
}

/**
 * Reads and decodes a call's input from a request body, as JSON or msgpack by
 * Content-Type: at most `maxBytes` (a larger Content-Length is refused before
 * reading), within `deadlineMs` (a client that trickles or stalls costs a bounded
 * time), nested at most `maxNestingDepth` deep (found before it is decoded). No body
 * and no Content-Type is `null` input. Rejects with a BodyRefusal; a client that
 * goes away rejects with a plain Error. `bytes`: the body's size as it arrived.
 */
export async function readInput(req: IncomingMessage, bounds: BodyBounds, beforeBody: () => void = () => undefined): Promise<{ input: unknown; bytes: number }> {
  const { maxBytes, deadlineMs } = bounds;
  // What the headers already say is refused before a byte of the body is read.
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const codec = JSON_TYPES.has(mediaType) ? codecs.json : MSGPACK_TYPES.has(mediaType) ? codecs.msgpack : undefined;
  if (!codec && mediaType !== '') {
    throw new BodyRefusal(415, `Content-Type "${mediaType}" is not accepted: send application/json or application/msgpack`);
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    throw new BodyRefusal(413, `the request body (${declared} bytes) is over the ${maxBytes}-byte input limit`);
  }
  // Only now may a client that sent `Expect: 100-continue` send its body.
  beforeBody();
  const body = await readBody(req, maxBytes, deadlineMs);
  if (!codec) {
    if (body.byteLength === 0) return { input: null, bytes: 0 };
    throw new BodyRefusal(415, 'a body needs a Content-Type: application/json or application/msgpack');
  }
  try {
    return { input: codec.decode(new Uint8Array(body.buffer, body.byteOffset, body.byteLength), bounds.maxNestingDepth), bytes: body.byteLength };
  } catch (error) {
    if (error instanceof ProtocolError && error.kind === 'FRAME_TOO_DEEP') {
      throw new BodyRefusal(400, `the body nests more than ${bounds.maxNestingDepth} maps and arrays, the most an input may (maxNestingDepth, spec §9)`);
    }
    throw new BodyRefusal(400, `the body is not valid ${codec.name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function readBody(req: IncomingMessage, maxBytes: number, deadlineMs: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  return new Promise<Buffer>((resolve, reject) => {
    const timer = setTimeout(() => fail(new BodyRefusal(408, `the request body did not arrive within ${deadlineMs} ms`)), deadlineMs);
    const onData = (chunk: Buffer): void => {
      total += chunk.byteLength;
      if (total > maxBytes) return fail(new BodyRefusal(413, `the request body is over the ${maxBytes}-byte input limit`));
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onClose = (): void => fail(new Error('the client went away while sending the body'));
    const cleanup = (): void => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', fail).off('close', onClose);
    };
    function fail(error: Error): void {
      cleanup();
      reject(error);
    }
    req.on('data', onData).on('end', onEnd).on('error', fail).on('close', onClose);
  });
}
