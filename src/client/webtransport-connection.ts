import {
  codecs,
  decodeEnvelope,
  encodeFrame,
  FrameDecoder,
  envelopes,
  RpcError,
  type Codec,
  type CodecName,
  type WebTransportCarrier,
} from '../protocol/index.js';
import { openWebTransport, type WtCarrierChoice, type WtSession } from '../webtransport/index.js';
import type { CallSink, ClientConnection } from './connection.js';
import { redact } from './websocket-connection.js';

export interface WebTransportConnectOptions {
  readonly codec?: CodecName;
  /** SHA-256 (hex) of the server's self-signed certificate. */
  readonly certHash?: string;
  readonly connectTimeoutMs?: number;
  /** HTTP/3, HTTP/2, or `auto` (HTTP/3 where this process can speak it, falling back to HTTP/2). */
  readonly transport?: WtCarrierChoice;
  readonly signal?: AbortSignal;
}

/**
 * WebTransport (HTTP/2 here, HTTP/3 where available): one bidirectional stream per
 * call, length-prefixed frames (spec/PROTOCOL.md §5.4). Authentication rides in each
 * call's `auth_token`.
 */
export async function connectWebTransport(
  url: string,
  options: WebTransportConnectOptions = {},
): Promise<ClientConnection & { readonly headerAuth: boolean }> {
  const target = new URL(url);
  if (target.pathname === '/callwire' && options.codec === 'json') target.pathname = '/callwire/json';
  const codec: Codec = target.pathname.endsWith('/json') ? codecs.json : codecs.msgpack;
  let wt: WtSession;
  let carrier: WebTransportCarrier;
  try {
    ({ session: wt, carrier } = await openWebTransport(target.toString(), { certHash: options.certHash, transport: options.transport }));
  } catch (error) {
    throw new RpcError('UNAVAILABLE', `could not connect to ${redact(url)}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      wt.ready,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no session within ${timeoutMs} ms`)), timeoutMs);
        if (options.signal?.aborted) reject(new RpcError('CANCELLED', 'cancelled while connecting'));
        options.signal?.addEventListener('abort', () => reject(new RpcError('CANCELLED', 'cancelled while connecting')), { once: true });
      }),
    ]);
  } catch (error) {
    wt.close();
    if (error instanceof RpcError) throw error;
    throw new RpcError('UNAVAILABLE', `could not connect to ${redact(url)}: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    clearTimeout(timer);
  }

  const sinks = new Set<CallSink>();
  let open = true;
  const closed = wt.closed
    .catch(() => undefined)
    .then(() => {
      open = false;
      const error = new RpcError('UNAVAILABLE', 'connection closed');
      for (const sink of [...sinks]) sink.lost(error);
      sinks.clear();
    });

  return {
    codec,
    carrier,
    headerAuth: false,
    closed,
    startCall(request, sink) {
      let delivering = true;
      let writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
      let finished = false;
      const write = (bytes: Uint8Array): void => {
        writer?.write(bytes).catch(() => undefined);
      };
      const finish = (): void => {
        if (finished) return;
        finished = true;
        sinks.delete(sink);
        writer?.close().catch(() => undefined); // FIN: the stream's slot is freed
      };
      sinks.add(sink);
      void (async () => {
        if (!open) throw new RpcError('UNAVAILABLE', 'connection is closed');
        // Past the stream limit, wait for a slot rather than fail the call.
        const stream = await wt.createBidirectionalStream({ waitUntilAvailable: true });
        writer = stream.writable.getWriter();
        if (finished) {
          // Aborted before the stream existed: nothing was sent, nothing to cancel.
          await writer.close().catch(() => undefined);
          return;
        }
        write(encodeFrame(codec.encode(request)));
        const reader = stream.readable.getReader();
        const decoder = new FrameDecoder();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const body of decoder.push(value)) {
            const parsed = decodeEnvelope(codec, body);
            if (parsed.kind === 'event' && delivering) sink.frame(parsed.envelope, body.byteLength);
          }
        }
        if (delivering && !finished) throw new RpcError('UNAVAILABLE', 'the server closed the call stream before its terminal event');
      })().catch((error: unknown) => {
        if (delivering && !finished) sink.lost(error instanceof RpcError ? error : new RpcError('UNAVAILABLE', `call stream failed: ${String(error)}`));
        finish();
      });
      return {
        abort() {
          if (!delivering) return;
          delivering = false;
          if (writer) write(encodeFrame(codec.encode(envelopes.aborted(request.id))));
          finish();
        },
        done() {
          delivering = false;
          finish();
        },
        send(envelope) {
          // Input follows the callee's first credit, which came on this stream: the writer exists.
          const body = codec.encode(envelope);
          if (delivering && writer) write(encodeFrame(body));
          return body.byteLength;
        },
      };
    },
    async close() {
      if (open) wt.close({ closeCode: 0, reason: 'client closed' });
      await closed;
    },
  };
}
