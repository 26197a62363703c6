// The HTTP/3 edge of the Node client (docs/http3.md "Node client"): Node has no QUIC, so a Node
// process that asks for HTTP/3 runs this one Deno program, which opens WebTransport
// sessions over HTTP/3 (edge/h3-session.ts) and carries each session and each stream
// to the Node process over a private unix socket, without looking inside a frame.
// Backpressure is the sockets': when Node stops reading a stream, this stops reading
// the QUIC stream, and the server's window for it stops opening.
//
// The bridge's messages are defined once, for both its sides, in
// src/webtransport/bridge-protocol.ts: Node opens one unix connection per session
// (`session`, answered `accepted` or `refused`; later from here `reset` and `close`, and
// from Node `close`; Node closing the connection closes the session) and one per stream
// (`stream`, then the stream's bytes, both ways; a half-close is FIN). A connection whose
// first line fails its schema or carries another secret is closed unanswered.
//
// It exits when its standard input ends (its Node process is gone), and removes its directory.
//
// Started by the client: deno run --unstable-net --allow-net --allow-read=<dir> --allow-write=<dir> h3-client-edge.ts <dir>/config.json

import { bridgeMessages, sameSecret, type BridgeMessage } from '../src/webtransport/bridge-protocol.ts';
import { openH3Session, type H3Session } from './h3-session.ts';
import { endWithParent } from './parent.ts';
import { eachMessage, line, readMessage, socketToStream, streamToSocket, writeAll } from './wire.ts';

const config = bridgeMessages.clientEdgeConfig.parse(JSON.parse(Deno.readTextFileSync(Deno.args[0]!)));
const sessions = new Map<string, { session: H3Session; control: Deno.Conn }>();
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
  const { value: hello, rest } = await readMessage(conn, ['session', 'stream']);
  if (!sameSecret(hello.secret, config.secret)) return conn.close();
  if (hello.type === 'session') return openSession(conn, hello, rest);
  return openStream(conn, hello.session, hello.n, rest);
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
  const id = crypto.randomUUID();
  sessions.set(id, { session, control });
  await writeAll(control, line<'accepted'>({ type: 'accepted', id }));
  let ended = false;
  const end = (info: { closeCode: number; reason: string }): void => {
    if (ended) return;
    ended = true;
    sessions.delete(id);
    session.close(info.closeCode, info.reason);
    void writeAll(control, line<'close'>({ type: 'close', code: info.closeCode, reason: info.reason.slice(0, 1024) }))
      .catch(() => undefined)
      .finally(() => {
        try {
          control.close();
        } catch {
          // already closed
        }
      });
  };
  void session.closed.then(end);
  // Node's `close` closes the session with its code; Node closing its end, or a line that
  // fails its schema, closes it too.
  let asked = { closeCode: 0, reason: 'closed by the client' };
  await eachMessage(control, early, ['close'], (message) => (asked = { closeCode: message.code, reason: message.reason })).catch(() => undefined);
  end(asked);
}

async function openStream(conn: Deno.Conn, sessionId: string, n: number, first: Uint8Array): Promise<void> {
  const owner = sessions.get(sessionId);
  if (!owner) return conn.close();
  const stream = await owner.session.openStream();
  const reader = stream.readable.getReader();
  const writer = stream.writable.getWriter();
  // Node to server, and back: each side's loop waits for the other side's reader (FIN as the call's input end, WT-2).
  const up = socketToStream(conn, writer, first);
  const down = streamToSocket(reader, conn, owner.control, n);
  await Promise.allSettled([up, down]);
  try {
    conn.close();
  } catch {
    // already closed
  }
}
