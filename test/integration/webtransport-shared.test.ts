import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance, type TestContext } from 'vitest';
import { SharedCallStream } from '../../src/client/shared-call-stream.js';
import { rawConnect, type RawEvent, type RawPeer } from '../../src/conformance/index.js';
import { envelopes, sharedStreamFrame } from '../../src/protocol/index.js';
import { ServerFixture, transportCases, type TransportCase } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';
import { receivePattern } from '../support/sample-ops.js';
import { sleep, until } from '../support/wait.js';

const h2 = transportCases.find((t) => t.name === 'WebTransport HTTP/2 msgpack')!;
const h3 = transportCases.find((t) => t.name === 'WebTransport HTTP/3 msgpack')!;
const carriers: TransportCase[] = [h2, h3];
const KIB = 1024;
const MIB = 1024 * KIB;

/** Unary calls at once, a 2 MiB upload and a 1 MiB stream: every kind of call the SDK makes. */
async function callsOfEveryKind(fx: ServerFixture, carrier: TransportCase, extra: { sharedStream?: boolean } = {}): Promise<void> {
  const client = await fx.client(carrier, extra);
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => client.call<{ text: string }>('test/echo', { text: `c${i}` })));
  expect(answers.map((a) => a.text)).toEqual(Array.from({ length: 40 }, (_, i) => `c${i}`));
  expect(await client.call('test/upload', { data: new Uint8Array(2 * MIB) })).toEqual({ bytes: 2 * MIB });
  expect((await receivePattern(client, MIB, 64 * KIB)).bytes).toBe(MIB);
}

for (const carrier of carriers) {
  describe.skipIf(carrier.missing !== undefined)(skipTitle(`shared call streams over ${carrier.name} (spec §5.4, WTS-1 to WTS-5)`, carrier.missing), () => {
    const fx = new ServerFixture();
    const old = new ServerFixture();
    let opened: MockInstance<typeof SharedCallStream.open>;
    let shared: MockInstance<SharedCallStream['startCall']>;
    beforeAll(async () => {
      await fx.start({ ...carrier.server, limits: { maxOutboundBytesPerConnection: MIB } });
      // A callee that refuses shared streams as one that predates them does (WT-1, WT-3).
      await old.start({ ...carrier.server, sharedStreams: false });
    });
    beforeEach(() => {
      opened = vi.spyOn(SharedCallStream, 'open');
      shared = vi.spyOn(SharedCallStream.prototype, 'startCall');
    });
    // Raw sessions a test opened, closed (even when it failed) before the fixture checks that nothing is left.
    const rawPeers: RawPeer[] = [];
    afterEach(async () => {
      vi.restoreAllMocks();
      await Promise.all(rawPeers.splice(0).map((peer) => peer.close()));
      await Promise.all([fx.settle(), old.settle()]);
    });
    afterAll(() => Promise.all([fx.stop(), old.stop()]));

    it('the SDK carries every call of a session on one shared stream by default', async () => {
      await callsOfEveryKind(fx, carrier);
      expect(opened).toHaveBeenCalledTimes(1);
      expect(shared).toHaveBeenCalledTimes(42);
      expect(await opened.mock.results[0]!.value).toBeInstanceOf(SharedCallStream);
    });

    it('against a callee that refuses them, the SDK falls back to a stream per call, once per session, and every call succeeds', async () => {
      await callsOfEveryKind(old, carrier);
      expect(opened).toHaveBeenCalledTimes(1);
      expect(await opened.mock.results[0]!.value).toBeUndefined();
      expect(shared).not.toHaveBeenCalled();
    });

    it('a caller that does not ask for them (as an older one) gets a stream per call from a callee that serves them', async () => {
      await callsOfEveryKind(fx, carrier, { sharedStream: false });
      expect(opened).not.toHaveBeenCalled();
    });

    it('a peer that never reads its shared stream: the server stops reading it at the bound, and answers every call once it reads (WTS-3)', async () => {
      const CALLS = 300;
      const peer = await rawConnect(carrier.url(fx.server), { codec: 'msgpack', certHash: fx.server.certHash, transport: carrier.options(fx.server).transport });
      const stream = 'bounded';
      peer.sendValue(sharedStreamFrame(stream));
      expect(await peer.events.take((e) => e.kind === 'frame' && e.id === stream, 5000)).toMatchObject({ value: { type: 'stream.shared' } });
      const startedBefore = fx.probe.started;
      peer.pause();
      const text = 'x'.repeat(64 * KIB);
      for (let i = 0; i < CALLS; i++) peer.sendValue({ type: 'call.requested', id: `c${i}`, payload: { operationId: 'test/echo', input: { text } } }, stream);
      // Long enough for the server to take every request if nothing held it back.
      await sleep(2000);
      const started = fx.probe.started - startedBefore;
      console.log(`calls the server started while the peer did not read: ${started} of ${CALLS} (64 KiB answers, a 1 MiB bound)`);
      // The session's bound (1 MiB of answers) and the carrier's windows (1 MiB each way)
      // hold a few dozen 64 KiB answers; the carrier alone (no bound of ours) takes ~90.
      expect(started).toBeLessThan(64);
      const seen = new Set<string>();
      peer.events.divert((e: RawEvent) => {
        if (e.kind === 'frame' && (e.value as { type: string }).type === 'call.responded') seen.add(e.id!);
      });
      peer.resume();
      await until(() => seen.size === CALLS, `${CALLS} answers (got ${seen.size})`, 60_000);
      await peer.close();
    }, 90_000);

    /** A raw session with two shared streams open and acknowledged. */
    async function twoSharedStreams(ctx: TestContext): Promise<RawPeer> {
      const peer = await rawConnect(carrier.url(fx.server), { codec: 'msgpack', certHash: fx.server.certHash, transport: carrier.options(fx.server).transport });
      rawPeers.push(peer);
      if (!peer.resets) {
        ctx.skip(`the ${peer.carrier} raw peer cannot reset a stream (docs/http3.md "Upstream defects")`);
      }
      for (const stream of ['one', 'two']) {
        peer.sendValue(sharedStreamFrame(stream));
        expect(await peer.events.take((e) => e.kind === 'frame' && e.id === stream, 5000)).toMatchObject({ value: { type: 'stream.shared' } });
      }
      return peer;
    }
    const forever = (id: string): unknown => envelopes.requested(id, { operationId: 'test/forever', input: null });

    it('a duplicate id on a second shared stream, then that stream reset: the call on the first stream runs on (ID-2, WTS-4)', async (ctx) => {
      const peer = await twoSharedStreams(ctx);
      const signals = fx.probe.signals.length;
      peer.sendValue(forever('x'), 'one');
      await peer.nextFor('x');
      peer.sendValue(forever('y'), 'two');
      await peer.nextFor('y');
      // The same id again, on the other stream: refused there, and not that stream's call.
      peer.sendValue(forever('x'), 'two');
      expect(await peer.next((e) => e.id === 'x' && e.type === 'call.error')).toMatchObject({ payload: { code: 'DUPLICATE_CALL_ID' } });
      peer.reset('two');
      // The reset reached the server once the second stream's own call is cancelled.
      await until(() => fx.probe.signals[signals + 1]!.aborted, 'the reset stream\'s own call cancelled', 10_000);
      expect(fx.probe.signals[signals]!.aborted).toBe(false);
      // And it still answers.
      const before = peer.framesFor('x').length;
      await until(() => peer.framesFor('x').length > before, 'x answers after the reset');
      peer.sendValue(envelopes.aborted('x'), 'one');
      await until(() => fx.probe.signals[signals]!.aborted, 'x cancelled by its own abort');
    });

    it('an id its first stream started, aborted from the second and started again there, belongs to the second: the first stream\'s reset leaves it alone (WTS-4)', async (ctx) => {
      const peer = await twoSharedStreams(ctx);
      const signals = fx.probe.signals.length;
      peer.sendValue(forever('x'), 'one');
      await peer.nextFor('x');
      peer.sendValue(forever('z'), 'one');
      await peer.nextFor('z');
      // ABT-1 from any stream of the session; then the id is free and the second stream reuses it.
      peer.sendValue(envelopes.aborted('x'), 'two');
      await until(() => fx.probe.signals[signals]!.aborted, 'the first x cancelled');
      peer.sendValue(forever('x'), 'two');
      await until(() => fx.probe.signals.length === signals + 3, 'the second x started');
      peer.reset('one');
      await until(() => fx.probe.signals[signals + 1]!.aborted, 'the reset stream\'s own call (z) cancelled', 10_000);
      expect(fx.probe.signals[signals + 2]!.aborted).toBe(false);
      peer.sendValue(envelopes.aborted('x'), 'two');
      await until(() => fx.probe.signals[signals + 2]!.aborted, 'the second x cancelled by its own abort');
    });

    it('the same on streams of one call each: an id aborted from another stream and started again on a new one is not the first stream\'s to reset (WT-2)', async (ctx) => {
      const peer = await rawConnect(carrier.url(fx.server), { codec: 'msgpack', certHash: fx.server.certHash, transport: carrier.options(fx.server).transport });
      rawPeers.push(peer);
      if (!peer.resets) ctx.skip(`the ${peer.carrier} raw peer cannot reset a stream (docs/http3.md "Upstream defects")`);
      const signals = fx.probe.signals.length;
      // Each request opens a stream of its own (WT-1); the raw peer keys a stream by its first id.
      peer.sendValue(forever('x'));
      await peer.nextFor('x');
      peer.sendValue(forever('y'));
      await peer.nextFor('y');
      peer.sendValue(envelopes.aborted('x'), 'y');
      await until(() => fx.probe.signals[signals]!.aborted, 'the first x cancelled');
      // A new stream for the new x: the first x's stream is still open.
      peer.sendValue(forever('x'));
      await until(() => fx.probe.signals.length === signals + 3, 'the second x started');
      peer.reset('x');
      peer.reset('y');
      await until(() => fx.probe.signals[signals + 1]!.aborted, 'y cancelled by its own stream\'s reset', 10_000);
      expect(fx.probe.signals[signals + 2]!.aborted).toBe(false);
      const before = peer.framesFor('x').length;
      await until(() => peer.framesFor('x').length > before, 'the second x answers after the reset');
    });
  });
}
