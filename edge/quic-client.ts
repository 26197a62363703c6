// The HTTP/3 edge of the Node client (docs/http3.md "Node client"): Node has no QUIC, so a Node
// process that asks for HTTP/3 runs this one Deno program, which opens WebTransport
// sessions over HTTP/3 (edge/h3-session.ts) and carries each session and each stream
// to the Node process over a private unix socket, without looking inside a frame.
// Backpressure is the sockets': when Node stops reading a stream, this stops reading
// the QUIC stream, and the server's window for it stops opening.
//
// Bridge protocol, one unix connection per session and per stream, each starting with
// one JSON line from Node:
//   {"secret","kind":"session","url","certHash"?,"idleTimeoutMs"} -> answered {"ok":true,"id"} or {"ok":false,"reason"};
//       later from here {"reset":n} (the server reset stream n) and {"closed":code,"reason"}.
//       Node closing the connection closes the session.
//   {"secret","kind":"stream","session","n"} -> then the stream's bytes, both ways; a half-close is FIN.
//
// It exits when its standard input ends (its Node process is gone), and removes its directory.
//
// Started by the client: deno run --unstable-net --allow-net --allow-read=<dir> --allow-write=<dir> quic-client.ts <dir>/config.json

import { openH3Session, type H3Session } from './h3-session.ts';
import { endWithParent } from './parent.ts';
import { line, readLine, writeAll } from './wire.ts';

interface Config {
  /** The private directory its Node process made for it: removed when that process is gone. */
  readonly dir: string;
  readonly socket: string;
  readonly secret: string;
}

const config = JSON.parse(Deno.readTextFileSync(Deno.args[0]!)) as Config;
const sessions = new Map<string, { session: H3Session; control: Deno.Conn }>();
const listener = Deno.listen({ transport: 'unix', path: config.socket });
console.log(JSON.stringify({ ready: true }));
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
  const { value: hello, rest } = await readLine(conn);
  if (hello['secret'] !== config.secret) return conn.close();
  if (hello['kind'] === 'session') return openSession(conn, hello);
  if (hello['kind'] === 'stream') return openStream(conn, String(hello['session']), Number(hello['n']), rest);
  conn.close();
}

async function openSession(control: Deno.Conn, hello: Record<string, unknown>): Promise<void> {
  const hash = typeof hello['certHash'] === 'string' ? hello['certHash'] : undefined;
  let session: H3Session;
  try {
    session = await openH3Session(new URL(String(hello['url'])), hash ? Uint8Array.from(hash.match(/../g) ?? [], (h) => parseInt(h, 16)) : undefined, Number(hello['idleTimeoutMs'] ?? 30_000));
  } catch (error) {
    await writeAll(control, line({ ok: false, reason: error instanceof Error ? error.message : String(error) }));
    return control.close();
  }
  const id = crypto.randomUUID();
  sessions.set(id, { session, control });
  await writeAll(control, line({ ok: true, id }));
  let ended = false;
  const end = (info: { closeCode: number; reason: string }): void => {
    if (ended) return;
    ended = true;
    sessions.delete(id);
    session.close(info.closeCode, info.reason);
    void writeAll(control, line({ closed: info.closeCode, reason: info.reason }))
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
  // Node closing its end closes the session.
  const buffer = new Uint8Array(256);
  for (;;) {
    const n = await control.read(buffer).catch(() => null);
    if (n === null) return end({ closeCode: 0, reason: 'closed by the client' });
  }
}

async function openStream(conn: Deno.Conn, sessionId: string, n: number, first: Uint8Array): Promise<void> {
  const owner = sessions.get(sessionId);
  if (!owner) return conn.close();
  const stream = await owner.session.openStream();
  const reader = stream.readable.getReader();
  const writer = stream.writable.getWriter();
  // Node to server: each write waits for QUIC's window, so a server that stops reading stops this loop.
  const up = (async () => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      if (first.byteLength > 0) await writer.write(first);
      for (;;) {
        const got = await conn.read(buffer);
        if (got === null) break;
        await writer.write(buffer.slice(0, got));
      }
      await writer.close(); // FIN: the end of the call's input (WT-2)
    } catch {
      await writer.abort().catch(() => undefined);
    }
  })();
  // Server to Node: a write waits for the socket, so a Node reader that pauses stops this loop.
  const down = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        await writeAll(conn, value);
      }
      await conn.closeWrite();
    } catch {
      // The server reset the stream: say so before the socket closes, so Node does not read it as an end.
      await writeAll(owner.control, line({ reset: n })).catch(() => undefined);
      try {
        conn.close();
      } catch {
        // already closed
      }
    }
  })();
  await Promise.allSettled([up, down]);
  try {
    conn.close();
  } catch {
    // already closed
  }
}
