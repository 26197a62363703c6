import { readFileSync } from 'node:fs';
import { connect as connectUnix, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { codecs, decodeEnvelope, encodeFrame, envelopes, FrameDecoder, type Envelope } from '../../src/protocol/index.js';
import { silentLogger, type Logger } from '../../src/dispatcher/index.js';
import { callStreamsAllowed, MUX_HEADER_BYTES, MUX_KIND, MUX_MAX_PAYLOAD_BYTES, MUX_STREAM_WINDOW_BYTES } from '../../src/webtransport/index.js';
import { childPids, commandLine } from '../support/proc.js';
import { hasHttp3, http3Missing, ServerFixture, transportCases } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { sleep, until } from '../support/wait.js';

// The HTTP/3 bridge's multiplexing (src/webtransport/bridge-mux.ts): one unix connection per
// session between the server's edge and the server, its streams under a window each. The
// server's side is spoken to here by a raw edge of the test's own (frames written and read
// by hand), and watched through the kernel's table of unix sockets.

/** The server's bridge socket and secret, from its edge's config file (this process owns the edge). */
function serverBridge(port: number): { socket: string; secret: string } {
  for (const pid of childPids(process.pid)) {
    const argv = commandLine(pid);
    if (!argv.some((arg) => arg.endsWith('edge/h3-server-edge.ts'))) continue;
    const config = JSON.parse(readFileSync(argv.at(-1)!, 'utf8')) as Record<string, unknown>;
    if (config['port'] === port) return { socket: String(config['socket']), secret: String(config['secret']) };
  }
  throw new Error('no server edge among this process\'s children');
}

/** Connections the server has accepted on its bridge socket and not yet closed (/proc/net/unix: the path, state connected). */
function acceptedConnections(socketPath: string): number {
  return readFileSync('/proc/net/unix', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[7] === socketPath && fields[5] === '03').length;
}

function muxFrame(kind: number, id: number, payload: Uint8Array = new Uint8Array(0), length = payload.byteLength): Buffer {
  const head = Buffer.alloc(MUX_HEADER_BYTES);
  head.writeUInt8(kind, 0);
  head.writeUInt32BE(id, 1);
  head.writeUInt32BE(length, 5);
  return Buffer.concat([head, payload]);
}

/** Stream `id` opened, with a call on it that runs until its session ends. */
function liveCall(id: number): Buffer {
  const request = encodeFrame(codecs.msgpack.encode(envelopes.requested(`live${id}`, { operationId: 'test/forever', input: null })));
  return Buffer.concat([muxFrame(MUX_KIND.open, id), muxFrame(MUX_KIND.data, id, request)]);
}

/** The fixture's calls per connection, so that its bridge's stream bound (twice the QUIC streams allowed, src/transports/h3-bridge.ts) is small enough to cross. */
const CALLS_IN_FLIGHT = 16;
const MAX_STREAMS = 2 * (callStreamsAllowed(CALLS_IN_FLIGHT) + 1);

/** A raw edge: one bridge connection, opened as the server's edge opens a session, then frames by hand. */
class RawEdge {
  readonly socket: Socket;
  /** DATA bytes received, by stream; and each stream's callwire envelopes, decoded. */
  readonly bytes = new Map<number, number>();
  readonly envelopes = new Map<number, Envelope[]>();
  readonly kinds: number[] = [];
  accepted = false;
  closed = false;
  private held = Buffer.alloc(0);
  private readonly decoders = new Map<number, FrameDecoder>();

  constructor(path: string, secret: string, url: string) {
    this.socket = connectUnix(path);
    this.socket.on('error', () => undefined);
    this.socket.once('close', () => (this.closed = true));
    this.socket.write(`${JSON.stringify({ type: 'session', secret, url })}\n`);
    this.socket.on('data', (chunk: Buffer) => this.receive(chunk));
  }

  send(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** A call on stream `id`: opens it and writes the request; `fin` ends the caller's input. */
  call(id: number, envelope: Envelope, fin = true): void {
    this.send(muxFrame(MUX_KIND.open, id));
    this.send(muxFrame(MUX_KIND.data, id, encodeFrame(codecs.msgpack.encode(envelope))));
    if (fin) this.send(muxFrame(MUX_KIND.fin, id));
  }

  private receive(chunk: Buffer): void {
    this.held = Buffer.concat([this.held, chunk]);
    if (!this.accepted) {
      const at = this.held.indexOf(10);
      if (at < 0) return;
      expect(JSON.parse(this.held.subarray(0, at).toString())).toMatchObject({ type: 'accepted' });
      this.accepted = true;
      this.held = this.held.subarray(at + 1);
    }
    while (this.held.byteLength >= MUX_HEADER_BYTES) {
      const length = this.held.readUInt32BE(5);
      if (this.held.byteLength < MUX_HEADER_BYTES + length) return;
      const kind = this.held.readUInt8(0);
      const id = this.held.readUInt32BE(1);
      const payload = this.held.subarray(MUX_HEADER_BYTES, MUX_HEADER_BYTES + length);
      this.held = this.held.subarray(MUX_HEADER_BYTES + length);
      this.kinds.push(kind);
      if (kind !== MUX_KIND.data) continue;
      this.bytes.set(id, (this.bytes.get(id) ?? 0) + length);
      const decoder = this.decoders.get(id) ?? new FrameDecoder(1 << 24);
      this.decoders.set(id, decoder);
      for (const body of decoder.push(payload)) {
        const parsed = decodeEnvelope(codecs.msgpack, body);
        if (parsed.kind === 'event') this.envelopes.set(id, [...(this.envelopes.get(id) ?? []), parsed.envelope]);
      }
    }
  }
}

describe.skipIf(!hasHttp3)(skipTitle('the HTTP/3 bridge multiplexes a session\'s streams on one unix connection', http3Missing), () => {
  const h3 = new ServerFixture();
  const warnings: string[] = [];
  const logger: Logger = { ...silentLogger, warn: (message, fields) => void warnings.push(`${message} ${JSON.stringify(fields)}`) };
  beforeAll(() => h3.start({ http3: true, logger, limits: { maxCallsInFlight: CALLS_IN_FLIGHT } }).then(() => undefined));
  afterEach(() => h3.settle());
  afterAll(() => h3.stop());

  const bridge = (): { socket: string; secret: string } => serverBridge(Number(new URL(h3.server.wtUrl!).port));

  /** A call over HTTP/3 through the real edges: the server is alive and serving. */
  async function serves(): Promise<void> {
    const client = await h3.client(transportCases[4]!);
    expect(await client.call('test/echo', { text: 'still here' })).toEqual({ text: 'still here' });
  }

  it('twelve streams in flight on each of two sessions: the server has accepted one unix connection per session', async () => {
    const { socket } = bridge();
    const [a, b] = await Promise.all([h3.client(transportCases[4]!), h3.client(transportCases[4]!)]);
    expect([a.carrier, b.carrier]).toEqual(['http/3', 'http/3']);
    const started = h3.probe.started;
    const subscriptions = [a, b].flatMap((client) => Array.from({ length: 12 }, () => client.subscribe('test/forever', null).subscribe()));
    await until(() => h3.probe.started - started === 24, 'all 24 streams started on the server');
    expect(h3.liveCalls()).toBe(24);
    expect(acceptedConnections(socket)).toBe(2);
    for (const s of subscriptions) s.unsubscribe();
  });

  it('a stream whose reader stops gets no more than its window, and a sibling on the same session is answered meanwhile', async () => {
    const { socket, secret } = bridge();
    const edge = new RawEdge(socket, secret, h3.server.wtUrl!);
    await until(() => edge.accepted, 'the session accepted');
    // Stream 0: 8 MiB of output with the call's own credit for all of it (§4.8), so only the
    // bridge's window holds it back; this edge never credits it.
    edge.call(0, envelopes.requested('big', { operationId: 'test/bytes', input: { totalBytes: 8 << 20, chunkBytes: 64 << 10 }, credit: 16 << 20 }), false);
    await until(() => (edge.bytes.get(0) ?? 0) >= MUX_STREAM_WINDOW_BYTES, 'stream 0 to fill its window');
    edge.call(1, envelopes.requested('small', { operationId: 'test/echo', input: { text: 'beside it' } }));
    await until(() => (edge.envelopes.get(1) ?? []).some((e) => e.type === 'call.responded'), 'the sibling stream\'s answer');
    expect(edge.envelopes.get(1)!.find((e) => e.type === 'call.responded')).toMatchObject({ id: 'small', payload: { output: { text: 'beside it' } } });
    await sleep(200);
    expect(edge.bytes.get(0)).toBe(MUX_STREAM_WINDOW_BYTES);
    // Credit for what was read lets exactly that much more through.
    edge.send(muxFrame(MUX_KIND.credit, 0, Buffer.from([0, 1, 0, 0])));
    await until(() => edge.bytes.get(0)! >= MUX_STREAM_WINDOW_BYTES + 65_536, 'stream 0 to go on with its credit');
    await sleep(200);
    expect(edge.bytes.get(0)).toBe(MUX_STREAM_WINDOW_BYTES + 65_536);
    edge.socket.destroy();
    await until(() => h3.liveCalls() === 0, 'the session\'s calls ended with its connection');
  });

  it.each([
    ['garbage', () => Buffer.from('GET / HTTP/1.1\r\n\r\n'), 'a frame of unknown kind'],
    ['a header announcing more than the largest frame', () => muxFrame(MUX_KIND.data, 0, new Uint8Array(0), MUX_MAX_PAYLOAD_BYTES + 1), 'over the largest'],
    ['a frame for a stream never opened', () => muxFrame(MUX_KIND.data, 5, Buffer.from('x')), 'never opened'],
    ['an open that skips ids', () => muxFrame(MUX_KIND.open, 3), 'not the next one'],
    // The server sent nothing on stream 0: its window is whole, so one byte of credit is over it.
    ['credit over the window', () => Buffer.concat([muxFrame(MUX_KIND.open, 0), muxFrame(MUX_KIND.credit, 0, Buffer.from([0, 0, 0, 1]))]), 'over its window'],
    ['a credit without its amount', () => Buffer.concat([muxFrame(MUX_KIND.open, 0), muxFrame(MUX_KIND.credit, 0, Buffer.from([0, 1]))]), 'a credit without its 4-byte amount'],
    // A live call on the stream, so the server's side of it is still open when the frame after its FIN comes.
    ['data after FIN', () => Buffer.concat([liveCall(0), muxFrame(MUX_KIND.fin, 0), muxFrame(MUX_KIND.data, 0, Buffer.from('x'))]), 'data on stream 0 after its end'],
    ['a second FIN', () => Buffer.concat([liveCall(0), muxFrame(MUX_KIND.fin, 0), muxFrame(MUX_KIND.fin, 0)]), 'a second end of stream 0'],
    ['an open with a payload', () => muxFrame(MUX_KIND.open, 0, Buffer.from('x')), 'an open with a payload'],
    ['a reset with a payload', () => Buffer.concat([liveCall(0), muxFrame(MUX_KIND.reset, 0, Buffer.from('x'))]), 'a reset with a payload'],
    [`more than maxStreams (${MAX_STREAMS}) streams at once`, () => Buffer.concat(Array.from({ length: MAX_STREAMS + 1 }, (_, id) => muxFrame(MUX_KIND.open, id))), `more than ${MAX_STREAMS} streams`],
  ])('an edge that sends %s loses that session, with a log that says why, and the server serves on', async (_, bytes, why) => {
    const { socket, secret } = bridge();
    warnings.length = 0;
    const edge = new RawEdge(socket, secret, h3.server.wtUrl!);
    await until(() => edge.accepted, 'the session accepted');
    await until(() => [...h3.server.connections()].length === 1, 'the bridged session open on the server');
    edge.send(bytes());
    await until(() => edge.closed, 'the server to end the session');
    await until(() => [...h3.server.connections()].length === 0, 'the session ended on the server');
    expect(warnings.filter((w) => w.includes('broke the protocol'))).toEqual([expect.stringContaining(why)]);
    await serves();
  });
});
