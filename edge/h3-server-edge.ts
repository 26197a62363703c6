// The HTTP/3 edge of `callwire serve` (docs/http3.md "Server", spec §5.4): a Deno program,
// because Deno ships a QUIC endpoint and a WebTransport server in a registry package.
// It terminates HTTP/3 WebTransport and carries each session to the Node server over a
// private unix socket, one connection per session with its streams multiplexed on it,
// without looking inside a frame: the streams already carry length-prefixed frames
// (§5.1). Backpressure is each stream's own window on the bridge: when the Node side
// stops reading a stream, this stops reading that QUIC stream only, and its QUIC
// flow-control window stops opening.
//
// The bridge is defined once, for both its sides, in src/webtransport/bridge-protocol.ts
// (the session's opening lines: `session`, answered `accepted` or `refused`) and
// src/webtransport/bridge-mux.ts (then frames: this edge opens the streams; resets both
// ways, `close` from the server, `lost` from here).
//
// It exits when its standard input ends (its server is gone), and removes its directory.
//
// Started by the server: deno run --unstable-net --allow-net --allow-read=<dir> --allow-write=<dir> h3-server-edge.ts <dir>/config.json

import { bridgeMessages, type BridgeMessage } from '../src/webtransport/bridge-protocol.ts';
import { endWithParent } from './parent.ts';
import { BridgeMux } from '../src/webtransport/bridge-mux.ts';
import { carryStream, connectBridge, connectionWriter, eachChunk, line, readMessage, readUntil, streamHeader, WT_STREAM, writeAll } from './wire.ts';

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
  const writer = connectionWriter(control);
  let closed = false;
  const mux = new BridgeMux({
    opens: true,
    write: writer.write,
    onClose: (code, reason) => wt.close({ closeCode: code, reason }),
    onViolation: (error) => {
      console.error(JSON.stringify({ event: 'bridge message refused', error: error.message }));
      closeAll();
    },
  });
  // A session closed by either side settles `closed`; a lost one (its QUIC connection timed
  // out or broke) rejects it, and the server hears `lost` first: its resumable calls wait (§4.9).
  const lost = wt.closed.then(
    () => false,
    () => true,
  );
  function closeAll(wasLost = false): void {
    if (closed) return;
    closed = true;
    try {
      wt.close();
    } catch {
      // already closed
    }
    if (wasLost) mux.lost();
    mux.end();
    void writer.drained().finally(() => {
      try {
        control.close();
      } catch {
        // already closed
      }
    });
  }
  void lost.then(closeAll);
  // The server's frames: its streams' bytes, and the session's close. Its end ends the session.
  void eachChunk(control, early, (chunk) => mux.receive(chunk)).finally(() => closeAll());

  // The session's streams are taken from the QUIC connection itself, not from
  // `wt.incomingBidirectionalStreams`: Deno 2.9.6 wraps each WebTransport stream so that
  // closing it sends no FIN, so a caller's stream never finished, never returned its
  // slot, and Chromium could open no 101st stream on a session (test/browser/http3.test.ts).
  // The QUIC stream's own close does send FIN. One connection carries one session here.
  const incoming = conn.incomingBidirectionalStreams.getReader();
  for (;;) {
    const next = await incoming.read().catch(() => ({ done: true as const, value: undefined }));
    // The connection's streams end with it: how the session ended says the rest.
    if (next.done) return void lost.then(closeAll);
    void serveStream(next.value, mux).catch(() => undefined);
  }
}

async function serveStream(stream: Deno.QuicBidirectionalStream, mux: BridgeMux): Promise<void> {
  const reader = stream.readable.getReader();
  const writer = stream.writable.getWriter();
  const header = await readUntil(reader, streamHeader).catch(() => undefined);
  const first = header?.value.type === WT_STREAM ? header.rest : undefined;
  if (first === undefined || mux.isEnded) {
    // Not a WebTransport stream (an HTTP/3 request on a WebTransport connection), or its session is over: refused.
    await Promise.allSettled([reader.cancel(), writer.close()]);
    return;
  }
  await carryStream(reader, writer, mux.open(), first);
}
