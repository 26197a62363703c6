import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { envelopes } from '../../src/protocol/index.js';
import { capsule, CAPSULE, RawWtH2Peer, requestBytes, streamCapsule, varint, type SessionEnd } from '../support/raw-wt-h2.js';
import { sleep, until } from '../support/wait.js';
import { WtChildServer } from '../support/wt-child.js';

// Issue 31, finding 2: a WebTransport-over-HTTP/2 peer (no token needed to open a session)
// whose capsules reached uncaught throws in the patched library and ended the server.
// Each path here is driven by a raw peer (test/support/raw-wt-h2.ts) against the server
// as a child process, so that a kill shows as its exit. After each: the process runs, and
// a call on a fresh session (the SDK's) is answered. The codes are RFC 9000's, as the
// library's other closes use (spec/PROTOCOL.md §5.4, hostile peers over HTTP/2).
const STREAM_STATE_ERROR = 0x05;
const FINAL_SIZE_ERROR = 0x06;
const FRAME_ENCODING_ERROR = 0x07;
const FLOW_CONTROL_ERROR = 63; // the library's "Frame length too big"

/** Client-opened bidirectional stream ids in this library's numbering: 1, 5, 9, … (the server's are 0, 4, 8, …). */
const clientBidi = (n: number): bigint => BigInt(4 * n + 1);

const echo = (id: string, text: string): Uint8Array => requestBytes(envelopes.requested(id, { operationId: 'test/echo', input: { text } }));

describe('hostile WebTransport-over-HTTP/2 capsules end one session, never the server (issue 31 #2)', () => {
  const server = new WtChildServer();
  const peers: RawWtH2Peer[] = [];
  beforeAll(() => server.start().then(() => undefined));
  afterEach(async () => {
    peers.splice(0).forEach((p) => p.close());
    try {
      await server.expectServing();
    } finally {
      // A killed server fails its own test only: the next one gets a new one.
      if (server.exited) await server.start();
    }
  });
  afterAll(() => server.stop());

  const open = async (): Promise<RawWtH2Peer> => {
    const peer = await RawWtH2Peer.open(server.addresses.wtUrl);
    peers.push(peer);
    return peer;
  };

  /** A call on stream `id` of `peer` is answered: the session still serves. */
  async function answers(peer: RawWtH2Peer, id: bigint, text: string): Promise<void> {
    await peer.send(streamCapsule(id, echo(text, text), true));
    await until(() => peer.on(id).some((e) => e.type === 'call.responded'), `the answer on stream ${id}`, 15_000);
    expect(peer.on(id).find((e) => e.type === 'call.responded')).toMatchObject({ payload: { output: { text } } });
  }

  /** How the session ended, or rstCode -1 when it did not within 15 s. */
  const endOf = (peer: RawWtH2Peer): Promise<SessionEnd> =>
    Promise.race([peer.ended, sleep(15_000).then(() => ({ closeCode: undefined, reason: 'the session did not end within 15 s', rstCode: -1 }))]);

  async function endsWith(peer: RawWtH2Peer, code: number): Promise<void> {
    const end = await endOf(peer);
    expect(end.closeCode, `reason: ${end.reason}`).toBe(code);
  }

  it('a WT_STREAM for a bidirectional id of the server\'s parity (never opened by it) ends the session with STREAM_STATE_ERROR', async () => {
    const peer = await open();
    await answers(peer, clientBidi(0), 'before');
    await peer.send(streamCapsule(0, echo('x', 'server parity')));
    await endsWith(peer, STREAM_STATE_ERROR);
    expect(peer.closeCapsule!.reason).toContain('never opened');
  });

  it('the same for a unidirectional id of the server\'s parity', async () => {
    const peer = await open();
    await peer.send(streamCapsule(2, new Uint8Array([1, 2, 3])));
    await endsWith(peer, STREAM_STATE_ERROR);
  });

  it('a WT_STREAM for a stream reset both ways, its id sent again, is dropped: the session goes on', async () => {
    const peer = await open();
    const id = clientBidi(0);
    // A call that runs until it is stopped: the stream is registered with the scheduler and never finished.
    await peer.send(streamCapsule(id, requestBytes(envelopes.requested('tick', { operationId: 'test/ticker', input: { count: 1_000_000, intervalMs: 20 } }))));
    await until(() => peer.on(id).length > 0, 'the ticker\'s first item', 15_000);
    // Reset both ways, and the same id again, in one write: the parser meets them in one pass.
    await peer.send(
      Buffer.concat([
        capsule(CAPSULE.resetStream, Buffer.concat([varint(id), varint(0)])),
        capsule(CAPSULE.stopSending, Buffer.concat([varint(id), varint(0)])),
        streamCapsule(id, echo('again', 'reused id'), true),
      ]),
    );
    await answers(peer, clientBidi(1), 'after the reset');
    expect(peer.on(id).filter((e) => e.id === 'again')).toEqual([]);
    expect(peer.isEnded).toBe(false);
  });

  it('a finished stream\'s id, sent again, is dropped: no second call on it, and the session goes on', async () => {
    const peer = await open();
    const id = clientBidi(0);
    await answers(peer, id, 'first');
    await until(() => peer.fins.has(id), 'the server\'s FIN on the first stream');
    await peer.send(streamCapsule(id, echo('second', 'duplicate id'), true));
    await answers(peer, clientBidi(1), 'after the duplicate');
    expect(peer.on(id).filter((e) => e.id === 'second')).toEqual([]);
    expect(peer.on(id).filter((e) => e.type === 'call.responded')).toHaveLength(1);
    expect(peer.isEnded).toBe(false);
  });

  it('data after a stream\'s FIN ends the session with FINAL_SIZE_ERROR', async () => {
    const peer = await open();
    const id = clientBidi(0);
    await peer.send(Buffer.concat([streamCapsule(id, new Uint8Array(0), true), streamCapsule(id, new Uint8Array([1]))]));
    await endsWith(peer, FINAL_SIZE_ERROR);
  });

  it('a length prefix past the session\'s window ends the session; bytes after it are never acted on', async () => {
    const peer = await open();
    await peer.send(Buffer.concat([capsule(CAPSULE.stream, varint(clientBidi(0)), 2n ** 62n - 1n), streamCapsule(0, echo('x', 'after'))]));
    await peer.send(streamCapsule(4, echo('y', 'later')));
    await endsWith(peer, FLOW_CONTROL_ERROR);
  });

  it('a close capsule shorter than its code ends the session (it read past its end and threw a RangeError)', async () => {
    const peer = await open();
    await peer.send(Buffer.concat([capsule(CAPSULE.closeSession), Buffer.alloc(8)]));
    await endsWith(peer, FRAME_ENCODING_ERROR);
  });

  it('a control capsule whose fields run past its length ends the session', async () => {
    const peer = await open();
    await peer.send(Buffer.concat([capsule(CAPSULE.maxStreamData, varint(clientBidi(0)), 1), varint(2n ** 40n)]));
    await endsWith(peer, FRAME_ENCODING_ERROR);
  });

  it('a capsule to be held whole over 16 KiB (a datagram of 100 KiB) ends the session; an unknown type of 1 MiB is skipped', async () => {
    const skipper = await open();
    await skipper.send(capsule(0x3f00, Buffer.alloc(1 << 20, 7)));
    await answers(skipper, clientBidi(0), 'after the unknown capsule');
    const peer = await open();
    await peer.send(capsule(CAPSULE.datagram, Buffer.alloc(100 * 1024)));
    await endsWith(peer, FRAME_ENCODING_ERROR);
  });

  it('a capsule cut short by the end of the CONNECT stream ends the session; so does one cut by the connection', async () => {
    const peer = await open();
    const whole = streamCapsule(clientBidi(0), echo('cut', 'cut short'), true);
    await peer.send(whole.subarray(0, whole.byteLength - 5));
    peer.stream.end();
    await endsWith(peer, FRAME_ENCODING_ERROR);
    // A varint cut after its first byte, then the connection gone.
    const other = await open();
    await other.send(Buffer.from([0xc0]));
    other.close();
    expect((await endOf(other)).rstCode).not.toBe(-1);
  });

  it('the peer\'s FIN on the CONNECT stream closes the session cleanly (code 0)', async () => {
    const peer = await open();
    await answers(peer, clientBidi(0), 'before the FIN');
    peer.stream.end();
    const end = await endOf(peer);
    expect(end.rstCode).toBe(0);
  });

  it('a second request on a stream whose call has ended and whose writer the server closed is refused without a write after the close', async () => {
    const peer = await open();
    const id = clientBidi(0);
    await peer.send(streamCapsule(id, echo('first', 'first')));
    await until(() => peer.fins.has(id), 'the server\'s FIN after the first call', 15_000);
    // Node 20's WritableStream asserts (ERR_INTERNAL_ASSERTION, uncaught) on a write after its close.
    await peer.send(streamCapsule(id, echo('second', 'second')));
    await answers(peer, clientBidi(1), 'after the second request');
    expect(peer.on(id).filter((e) => e.id === 'second')).toEqual([]);
  });
});
