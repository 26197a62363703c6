// The HTTP/3 edge of `callwire serve` (docs/http3.md "Server", spec §5.4): a Deno program,
// because Deno ships a QUIC endpoint and a WebTransport server in a registry package.
// It terminates HTTP/3 WebTransport and carries each session and each stream to the
// Node server over a private unix socket, without looking inside a frame: the streams
// already carry length-prefixed frames (§5.1). Backpressure is the sockets': when
// the Node side stops reading a stream, this stops reading the QUIC stream, and the
// stream's flow-control window stops opening.
//
// The bridge's messages are defined once, for both its sides, in
// src/webtransport/bridge-protocol.ts: this edge opens one unix connection per session
// (`session`, answered `accepted` or `refused`, then `reset` lines both ways and `close`
// from the server) and one per stream (`stream`, then the stream's bytes; end of input is FIN).
//
// It exits when its standard input ends (its server is gone), and removes its directory.
//
// Started by the server: deno run --unstable-net --allow-net --allow-read=<dir> --allow-write=<dir> h3-server-edge.ts <dir>/config.json

import { bridgeMessages, type BridgeMessage } from '../src/webtransport/bridge-protocol.ts';
import { endWithParent } from './parent.ts';
import { connectBridge, eachMessage, line, readMessage, readUntil, socketToStream, streamHeader, streamToSocket, WT_STREAM, writeAll } from './wire.ts';

const config = bridgeMessages.serverEdgeConfig.parse(JSON.parse(Deno.readTextFileSync(Deno.args[0]!)));
endWithParent(config.dir);
const cert = Deno.readTextFileSync(config.certFile);
const key = Deno.readTextFileSync(config.keyFile);
const endpoint = new Deno.QuicEndpoint({ hostname: config.host, port: config.port });
const keepalive = config.keepaliveMs > 0 ? { keepAliveInterval: config.keepaliveMs, maxIdleTimeout: 2 * config.keepaliveMs } : {};
const listener = endpoint.listen({ cert, key, alpnProtocols: ['h3'], maxConcurrentBidirectionalStreams: config.maxStreams, ...keepalive });
// The first line on stdout tells the server the edge is up, and on which port.
console.log(JSON.stringify({ type: 'ready', port: endpoint.addr.port } satisfies BridgeMessage<'ready'>));

for await (const incoming of listener) {
  void (async () => {
    const conn = await incoming.accept();
    const wt = await Deno.upgradeWebTransport(conn);
    await serveSession(conn, wt);
  })().catch((error) => console.error(JSON.stringify({ event: 'session failed', error: String(error) })));
}

async function serveSession(conn: Deno.QuicConn, wt: Awaited<ReturnType<typeof Deno.upgradeWebTransport>>): Promise<void> {
  const control = await connectBridge(config.socket);
  await writeAll(control, line<'session'>({ type: 'session', secret: config.secret, url: wt.url }));
  const { value: answer, rest: early } = await readMessage(control, ['accepted', 'refused']).catch((error: unknown) => {
    control.close();
    wt.close({ closeCode: 0, reason: 'the server refused' });
    throw error;
  });
  if (answer.type === 'refused') {
    wt.close({ closeCode: answer.status ?? 0, reason: answer.reason });
    control.close();
    return;
  }
  await wt.ready;
  const id = answer.id;
  const writers = new Map<number, WritableStreamDefaultWriter<Uint8Array>>();
  const readers = new Map<number, ReadableStreamDefaultReader<Uint8Array>>();
  let closed = false;
  // A session closed by either side settles `closed`; a lost one (its QUIC connection timed
  // out or broke) rejects it, and the server hears `lost` first: its resumable calls wait (§4.9).
  const lost = wt.closed.then(
    () => false,
    () => true,
  );
  const closeAll = (wasLost = false): void => {
    if (closed) return;
    closed = true;
    try {
      wt.close();
    } catch {
      // already closed
    }
    void (wasLost ? writeAll(control, line<'lost'>({ type: 'lost' })) : Promise.resolve())
      .catch(() => undefined)
      .finally(() => {
        try {
          control.close();
        } catch {
          // already closed
        }
      });
  };
  void lost.then(closeAll);
  // Control lines from the server: a stream it reset, or the session's close. A line that
  // fails its schema ends the session.
  void eachMessage(control, early, ['reset', 'close'], (message) => {
    if (message.type === 'reset') {
      void writers.get(message.n)?.abort(new Error('reset by the server')).catch(() => undefined);
      void readers.get(message.n)?.cancel('reset by the server').catch(() => undefined);
    } else {
      wt.close({ closeCode: message.code, reason: message.reason });
    }
  })
    .catch((error: unknown) => console.error(JSON.stringify({ event: 'bridge message refused', error: String(error) })))
    .finally(() => closeAll());

  // The session's streams are taken from the QUIC connection itself, not from
  // `wt.incomingBidirectionalStreams`: Deno 2.9.6 wraps each WebTransport stream so that
  // closing it sends no FIN, so a caller's stream never finished, never returned its
  // slot, and Chromium could open no 101st stream on a session (test/browser/http3.test.ts).
  // The QUIC stream's own close does send FIN. One connection carries one session here.
  const incoming = conn.incomingBidirectionalStreams.getReader();
  for (let n = 0; ; n++) {
    const next = await incoming.read().catch(() => ({ done: true as const, value: undefined }));
    // The connection's streams end with it: how the session ended says the rest.
    if (next.done) return void lost.then(closeAll);
    void serveStream(next.value, id, n, control, writers, readers).catch(() => undefined);
  }
}

async function serveStream(
  stream: Deno.QuicBidirectionalStream,
  session: string,
  n: number,
  control: Deno.Conn,
  writers: Map<number, WritableStreamDefaultWriter<Uint8Array>>,
  readers: Map<number, ReadableStreamDefaultReader<Uint8Array>>,
): Promise<void> {
  const reader = stream.readable.getReader();
  const writer = stream.writable.getWriter();
  const header = await readUntil(reader, streamHeader).catch(() => undefined);
  const first = header?.value.type === WT_STREAM ? header.rest : undefined;
  if (first === undefined) {
    // Not a WebTransport stream (an HTTP/3 request on a WebTransport connection): refused.
    await Promise.allSettled([reader.cancel(), writer.close()]);
    return;
  }
  const conn = await connectBridge(config.socket);
  await writeAll(conn, line<'stream'>({ type: 'stream', secret: config.secret, session, n }));
  if (first.byteLength > 0) await writeAll(conn, first);
  writers.set(n, writer);
  readers.set(n, reader);
  const forget = (): void => {
    writers.delete(n);
    readers.delete(n);
  };
  // Caller to server, and back: each side's loop waits for the other side's reader (FIN as the caller's input end, WT-2).
  const up = streamToSocket(reader, conn, control, n);
  const down = socketToStream(conn, writer);
  await Promise.allSettled([up, down]);
  forget();
  try {
    conn.close();
  } catch {
    // already closed
  }
}
