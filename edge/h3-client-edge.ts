// The HTTP/3 edge of the Node client (docs/http3.md "Node client"): Node has no QUIC, so a Node
// process that asks for HTTP/3 runs this one Deno program, which opens WebTransport
// sessions over HTTP/3 (edge/h3-session.ts) and carries each session to the Node process
// over a private unix socket, one connection per session with its streams multiplexed on
// it, without looking inside a frame. Backpressure is each stream's own window on the
// bridge: when Node stops reading a stream, this stops reading that QUIC stream, and the
// server's window for it stops opening.
//
// The bridge is defined once, for both its sides, in src/webtransport/bridge-protocol.ts
// (Node's `session` line, answered `accepted` or `refused`) and src/webtransport/bridge-mux.ts
// (then frames: Node opens the streams; resets both ways, `close` both ways; Node closing
// the connection closes the session). A connection whose first line fails its schema or
// carries another secret is closed unanswered.
//
// It exits when its standard input ends (its Node process is gone), and removes its directory.
//
// Started by the client: deno run --unstable-net --allow-net --allow-read=<dir> --allow-write=<dir> h3-client-edge.ts <dir>/config.json

import { BridgeMux } from '../src/webtransport/bridge-mux.ts';
import { bridgeMessages, sameSecret, type BridgeMessage } from '../src/webtransport/bridge-protocol.ts';
import { openH3Session, type H3Session } from './h3-session.ts';
import { endWithParent } from './parent.ts';
import { carryStream, connectionWriter, eachChunk, line, readMessage, writeAll } from './wire.ts';

const config = bridgeMessages.clientEdgeConfig.parse(JSON.parse(Deno.readTextFileSync(Deno.args[0]!)));
const listener = Deno.listen({ transport: 'unix', path: config.socket });
console.log(JSON.stringify({ type: 'ready' } satisfies BridgeMessage<'ready'>));
endWithParent(config.dir);

for await (const conn of listener) {
  void serve(conn).catch(() => {
    try {
      conn.close();
    } catch {
      // already closed
    }
  });
}

async function serve(conn: Deno.Conn): Promise<void> {
  const { value: hello, rest } = await readMessage(conn, ['session']);
  if (!sameSecret(hello.secret, config.secret)) return conn.close();
  return openSession(conn, hello, rest);
}

async function openSession(control: Deno.Conn, hello: BridgeMessage<'session'>, early: Uint8Array): Promise<void> {
  const hash = hello.certHash;
  let session: H3Session;
  try {
    session = await openH3Session(new URL(hello.url), hash ? Uint8Array.from(hash.match(/../g) ?? [], (h) => parseInt(h, 16)) : undefined, hello.idleTimeoutMs ?? 30_000);
  } catch (error) {
    await writeAll(control, line<'refused'>({ type: 'refused', reason: (error instanceof Error ? error.message : String(error)).slice(0, 1024) }));
    return control.close();
  }
  await writeAll(control, line<'accepted'>({ type: 'accepted', id: crypto.randomUUID() }));
  const writer = connectionWriter(control);
  // Node's `close` closes the session with its code; Node closing its end, or a frame that
  // breaks the bridge's rules, closes it too.
  let asked = { closeCode: 0, reason: 'closed by the client' };
  const mux = new BridgeMux({
    opens: false,
    write: writer.write,
    onStream: (stream) => {
      void session.openStream().then(
        (quic) => carryStream(quic.readable.getReader(), quic.writable.getWriter(), stream),
        (error: unknown) => void stream.writable.abort(error).catch(() => undefined),
      );
    },
    onClose: (closeCode, reason) => (asked = { closeCode, reason }),
    onViolation: () => end(asked),
  });
  let ended = false;
  function end(info: { closeCode: number; reason: string }): void {
    if (ended) return;
    ended = true;
    session.close(info.closeCode, info.reason);
    mux.close(info.closeCode, info.reason);
    mux.end();
    void writer.drained().finally(() => {
      try {
        control.close();
      } catch {
        // already closed
      }
    });
  }
  void session.closed.then(end);
  await eachChunk(control, early, (chunk) => mux.receive(chunk));
  end(asked);
}
