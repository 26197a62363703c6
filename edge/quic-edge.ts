// The HTTP/3 edge of `callwire serve` (README "Transports", spec §5.4): a Deno program,
// because Deno ships a QUIC endpoint and a WebTransport server in a registry package.
// It terminates HTTP/3 WebTransport and carries each session and each stream to the
// Node server over a private unix socket, without looking inside a frame: the streams
// already carry length-prefixed frames (§5.1). Backpressure is the sockets': when
// the Node side stops reading a stream, this stops reading the QUIC stream, and the
// stream's flow-control window stops opening.
//
// Bridge protocol, one unix connection per session and per stream, each starting with
// one JSON line from here:
//   {"secret","kind":"session","path"}  -> answered {"ok":true,"id"} or {"ok":false,"status","reason"};
//                                          then control lines both ways: {"reset":n} (a stream was reset),
//                                          and from the server {"close":code,"reason"}. Either end closing
//                                          the connection closes the session.
//   {"secret","kind":"stream","session","n"} -> then the stream's bytes, both ways; end of input is FIN.
//
// Started by the server: deno run --unstable-net --allow-net --allow-read --allow-write=<socket dir> quic-edge.ts <config.json>

interface Config {
  readonly host: string;
  readonly port: number;
  readonly certFile: string;
  readonly keyFile: string;
  readonly socket: string;
  readonly secret: string;
}

const config = JSON.parse(Deno.readTextFileSync(Deno.args[0]!)) as Config;
const cert = Deno.readTextFileSync(config.certFile);
const key = Deno.readTextFileSync(config.keyFile);
const encoder = new TextEncoder();
const line = (value: unknown): Uint8Array => encoder.encode(`${JSON.stringify(value)}\n`);

/** Writes all of `bytes`: a Deno connection's write may take only part of them. */
async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.byteLength; ) at += await conn.write(bytes.subarray(at));
}

/** Reads one newline-terminated JSON line from a connection, leaving the rest unread. */
async function readLine(conn: Deno.Conn): Promise<Record<string, unknown>> {
  const bytes: number[] = [];
  const one = new Uint8Array(1);
  for (;;) {
    const n = await conn.read(one);
    if (n === null) throw new Error('the server closed the bridge');
    if (one[0] === 10) return JSON.parse(new TextDecoder().decode(new Uint8Array(bytes))) as Record<string, unknown>;
    bytes.push(one[0]!);
  }
}

/** WebTransport over HTTP/3's bidirectional stream type (draft-ietf-webtrans-http3 §4.2). */
const WT_STREAM = 0x41;

/** Reads a QUIC variable-length integer at `at`, or undefined when `bytes` ends first. */
function varint(bytes: Uint8Array, at: number): { value: number; next: number } | undefined {
  if (at >= bytes.byteLength) return undefined;
  const length = 1 << (bytes[at]! >> 6);
  if (at + length > bytes.byteLength) return undefined;
  let value = bytes[at]! & 0x3f;
  for (let i = 1; i < length; i++) value = value * 256 + bytes[at + i]!;
  return { value, next: at + length };
}

/**
 * Takes the stream's WebTransport header (its type and session id) off the front of the
 * stream; what follows it is the caller's bytes. Undefined for a stream of another kind.
 */
async function readHeader(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Uint8Array | undefined> {
  let head = new Uint8Array(0);
  for (;;) {
    const type = varint(head, 0);
    const session = type && varint(head, type.next);
    if (type && type.value !== WT_STREAM) return undefined;
    if (session) return head.subarray(session.next);
    const { value, done } = await reader.read();
    if (done) return undefined;
    const joined = new Uint8Array(head.byteLength + value.byteLength);
    joined.set(head);
    joined.set(value, head.byteLength);
    head = joined;
  }
}

const endpoint = new Deno.QuicEndpoint({ hostname: config.host, port: config.port });
const listener = endpoint.listen({ cert, key, alpnProtocols: ['h3'] });
// The first line on stdout tells the server the edge is up, and on which port.
console.log(JSON.stringify({ ready: true, port: endpoint.addr.port }));

for await (const incoming of listener) {
  void (async () => {
    const conn = await incoming.accept();
    const wt = await Deno.upgradeWebTransport(conn);
    await serveSession(conn, wt, new URL(wt.url).pathname);
  })().catch((error) => console.error(JSON.stringify({ event: 'session failed', error: String(error) })));
}

async function serveSession(conn: Deno.QuicConn, wt: WebTransport, path: string): Promise<void> {
  const control = await Deno.connect({ transport: 'unix', path: config.socket });
  await writeAll(control, line({ secret: config.secret, kind: 'session', path }));
  const answer = await readLine(control);
  if (answer['ok'] !== true) {
    wt.close({ closeCode: Number(answer['status'] ?? 0), reason: String(answer['reason'] ?? 'refused') });
    control.close();
    return;
  }
  await wt.ready;
  const id = String(answer['id']);
  const writers = new Map<number, WritableStreamDefaultWriter<Uint8Array>>();
  const readers = new Map<number, ReadableStreamDefaultReader<Uint8Array>>();
  let closed = false;
  const closeAll = (): void => {
    if (closed) return;
    closed = true;
    try {
      control.close();
    } catch {
      // already closed
    }
    try {
      wt.close();
    } catch {
      // already closed
    }
  };
  void wt.closed.catch(() => undefined).then(closeAll);
  // Control lines from the server: a stream it reset, or the session's close.
  void (async () => {
    let pending = '';
    const buffer = new Uint8Array(4096);
    for (;;) {
      const n = await control.read(buffer).catch(() => null);
      if (n === null) return closeAll();
      pending += new TextDecoder().decode(buffer.subarray(0, n));
      for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
        const message = JSON.parse(pending.slice(0, at)) as { reset?: number; close?: number; reason?: string };
        pending = pending.slice(at + 1);
        if (message.reset !== undefined) {
          void writers.get(message.reset)?.abort(new Error('reset by the server')).catch(() => undefined);
          void readers.get(message.reset)?.cancel('reset by the server').catch(() => undefined);
        } else if (message.close !== undefined) {
          wt.close({ closeCode: message.close, reason: message.reason ?? '' });
        }
      }
    }
  })();

  // The session's streams are taken from the QUIC connection itself, not from
  // `wt.incomingBidirectionalStreams`: Deno 2.9.6 wraps each WebTransport stream so that
  // closing it sends no FIN, so a caller's stream never finished, never returned its
  // slot, and Chromium could open no 101st stream on a session (test/browser/http3.test.ts).
  // The QUIC stream's own close does send FIN. One connection carries one session here.
  const incoming = conn.incomingBidirectionalStreams.getReader();
  for (let n = 0; ; n++) {
    const next = await incoming.read().catch(() => ({ done: true as const, value: undefined }));
    if (next.done) return closeAll();
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
  const first = await readHeader(reader).catch(() => undefined);
  if (first === undefined) {
    // Not a WebTransport stream (an HTTP/3 request on a WebTransport connection): refused.
    await Promise.allSettled([reader.cancel(), writer.close()]);
    return;
  }
  const conn = await Deno.connect({ transport: 'unix', path: config.socket });
  await writeAll(conn, line({ secret: config.secret, kind: 'stream', session, n }));
  if (first.byteLength > 0) await writeAll(conn, first);
  writers.set(n, writer);
  readers.set(n, reader);
  const forget = (): void => {
    writers.delete(n);
    readers.delete(n);
  };
  // Caller to server: a write waits for the socket, so a server that stops reading stops this loop.
  const up = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        await writeAll(conn, value);
      }
      await conn.closeWrite(); // FIN: the caller's end of input (WT-2)
    } catch {
      // A reset from the caller: tell the server on the session's control connection.
      await writeAll(control, line({ reset: n })).catch(() => undefined);
      conn.close();
    }
  })();
  // Server to caller.
  const down = (async () => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const got = await conn.read(buffer);
        if (got === null) break;
        await writer.write(buffer.slice(0, got));
      }
      await writer.close();
    } catch {
      await writer.abort().catch(() => undefined);
    }
  })();
  await Promise.allSettled([up, down]);
  forget();
  try {
    conn.close();
  } catch {
    // already closed
  }
}
