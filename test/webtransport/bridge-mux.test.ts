import { describe, expect, it } from 'vitest';
import { BridgeMux, MUX_HEADER_BYTES, MUX_KIND, MUX_STREAM_WINDOW_BYTES, type BridgeMuxError, type MuxStream } from '../../src/webtransport/bridge-mux.js';

/** Two muxes joined back to back, as the two ends of one bridge connection are. */
function pair(): { opener: BridgeMux; acceptor: BridgeMux; accepted: MuxStream[]; violations: BridgeMuxError[] } {
  const accepted: MuxStream[] = [];
  const violations: BridgeMuxError[] = [];
  const acceptor: BridgeMux = new BridgeMux({
    opens: false,
    write: (parts) => parts.forEach((p) => opener.receive(p.slice())),
    onStream: (s) => accepted.push(s),
    onViolation: (e) => violations.push(e),
  });
  const opener: BridgeMux = new BridgeMux({
    opens: true,
    write: (parts) => parts.forEach((p) => acceptor.receive(p.slice())),
    onViolation: (e) => violations.push(e),
  });
  return { opener, acceptor, accepted, violations };
}

const turn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

async function readAll(stream: MuxStream): Promise<number> {
  const reader = stream.readable.getReader();
  let n = 0;
  for (let next = await reader.read(); !next.done; next = await reader.read()) n += next.value.byteLength;
  return n;
}

describe('the HTTP/3 bridge mux (src/webtransport/bridge-mux.ts)', () => {
  it("a reader grants credit as it takes bytes, but none for what arrived before its peer's end: that peer sends nothing more", async () => {
    let credits = 0;
    const accepted: MuxStream[] = [];
    const opener: BridgeMux = new BridgeMux({ opens: true, write: (parts) => parts.forEach((p) => acceptor.receive(p.slice())), onViolation: () => undefined });
    const acceptor: BridgeMux = new BridgeMux({
      opens: false,
      write: (parts) =>
        parts.forEach((p) => {
          if (p.byteLength === MUX_HEADER_BYTES && p[0] === MUX_KIND.credit) credits++;
          opener.receive(p.slice());
        }),
      onStream: (s) => accepted.push(s),
      onViolation: () => undefined,
    });
    // Still open: taking a window's bytes grants them back.
    const open = opener.open().writable.getWriter();
    await open.write(new Uint8Array(MUX_STREAM_WINDOW_BYTES));
    await turn();
    const reader = accepted[0]!.readable.getReader();
    for (let got = 0; got < MUX_STREAM_WINDOW_BYTES; ) got += (await reader.read()).value!.byteLength;
    await turn();
    expect(credits).toBeGreaterThan(0);
    // Ended before its reader took anything: taking it all grants nothing.
    const before = credits;
    const ended = opener.open().writable.getWriter();
    await ended.write(new Uint8Array(MUX_STREAM_WINDOW_BYTES));
    await ended.close();
    await turn();
    expect(await readAll(accepted[1]!)).toBe(MUX_STREAM_WINDOW_BYTES);
    await turn();
    expect(credits).toBe(before);
  });

  it('a stream whose reader stops holds its writer at its window, while a sibling stream carries a MiB to its end', async () => {
    const { opener, accepted, violations } = pair();
    const stalled = opener.open();
    const sibling = opener.open();
    const stalledWriter = stalled.writable.getWriter();
    let stalledWritten = 0;
    void (async () => {
      for (;;) {
        await stalledWriter.write(new Uint8Array(16 * 1024));
        stalledWritten += 16 * 1024;
      }
    })().catch(() => undefined);
    await turn();
    const siblingWriter = sibling.writable.getWriter();
    const written = (async () => {
      for (let i = 0; i < 64; i++) await siblingWriter.write(new Uint8Array(16 * 1024));
      await siblingWriter.close();
    })();
    expect(accepted).toHaveLength(2);
    expect(await readAll(accepted[1]!)).toBe(1024 * 1024);
    await written;
    await turn();
    // Nobody read stream 0: its writer stopped at the window, and the window's bytes wait for a reader.
    expect(stalledWritten).toBe(MUX_STREAM_WINDOW_BYTES);
    expect(violations).toEqual([]);
    // Its reader starts: the writer goes on.
    const reader = accepted[0]!.readable.getReader();
    for (let got = 0; got < 2 * MUX_STREAM_WINDOW_BYTES; ) got += (await reader.read()).value!.byteLength;
    expect(stalledWritten).toBeGreaterThan(MUX_STREAM_WINDOW_BYTES);
    opener.end();
  });

  it('a peer that sends a stream more than its window, past a reader that takes nothing, ends the session', async () => {
    const { acceptor, accepted, violations } = pair();
    const frame = (kind: number, id: number, payload = new Uint8Array(0)): Uint8Array => {
      const out = new Uint8Array(9 + payload.byteLength);
      new DataView(out.buffer).setUint8(0, kind);
      new DataView(out.buffer).setUint32(1, id);
      new DataView(out.buffer).setUint32(5, payload.byteLength);
      out.set(payload, 9);
      return out;
    };
    acceptor.receive(frame(1, 0));
    for (let i = 0; i < 4; i++) acceptor.receive(frame(2, 0, new Uint8Array(MUX_STREAM_WINDOW_BYTES / 4)));
    expect(violations).toEqual([]);
    acceptor.receive(frame(2, 0, new Uint8Array(1)));
    expect(violations.map((e) => e.message)).toEqual([expect.stringContaining('over its window')]);
    expect(acceptor.isEnded).toBe(true);
    await expect(accepted[0]!.readable.getReader().read()).rejects.toThrow();
  });

  it('FIN crosses as the end of the reader\'s bytes; an abort resets the stream both ways at the peer', async () => {
    const { opener, acceptor, accepted } = pair();
    const finished = opener.open();
    const w = finished.writable.getWriter();
    await w.write(new TextEncoder().encode('hello'));
    await w.close();
    expect(await readAll(accepted[0]!)).toBe(5);

    const reset = opener.open();
    await reset.writable.abort(new Error('caller gone'));
    await turn();
    await expect(accepted[1]!.readable.getReader().read()).rejects.toThrow(/reset/);
    await expect(accepted[1]!.writable.getWriter().write(new Uint8Array(1))).rejects.toThrow();
    // A stream is forgotten once both its halves are over: the reset one at once, the other at its second FIN.
    expect([opener.size, acceptor.size]).toEqual([1, 1]);
    await accepted[0]!.writable.close();
    await turn();
    expect([opener.size, acceptor.size]).toEqual([0, 0]);
  });
});

/** One frame, written by hand as a hostile peer would. */
function rawFrame(kind: number, id: number, payload: Uint8Array = new Uint8Array(0)): Uint8Array {
  const out = new Uint8Array(MUX_HEADER_BYTES + payload.byteLength);
  const view = new DataView(out.buffer);
  view.setUint8(0, kind);
  view.setUint32(1, id);
  view.setUint32(5, payload.byteLength);
  out.set(payload, MUX_HEADER_BYTES);
  return out;
}
const amount = (n: number): Uint8Array => new Uint8Array([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
const { open, data, fin, reset, credit, lost } = MUX_KIND;

/** The accepting side (the server's, in production) fed hand-written frames: what it wrote back, and what it refused. */
function acceptorFed(maxStreams = 4): { mux: BridgeMux; accepted: MuxStream[]; violations: string[]; feed: (...frames: Uint8Array[]) => void } {
  const accepted: MuxStream[] = [];
  const violations: string[] = [];
  const mux = new BridgeMux({ opens: false, maxStreams, write: () => undefined, onStream: (s) => accepted.push(s), onViolation: (e) => violations.push(e.message) });
  return { mux, accepted, violations, feed: (...frames) => frames.forEach((f) => mux.receive(f)) };
}

describe('the bridge mux refuses each broken rule: the session ends, its streams with it, and the rule is named', () => {
  // [rule, frames that keep it to the limit, the one frame that breaks it, the message naming it]
  const cases: [string, () => Uint8Array[], () => Uint8Array, RegExp][] = [
    // The acceptor sent nothing on stream 0: its window is whole, so any credit is over it.
    ['credit over the window', () => [rawFrame(open, 0), rawFrame(credit, 0, amount(0))], () => rawFrame(credit, 0, amount(1)), /credit on stream 0 over its window/],
    ['a credit without its amount', () => [rawFrame(open, 0)], () => rawFrame(credit, 0, new Uint8Array(3)), /a credit without its 4-byte amount/],
    ['a credit with more than its amount', () => [rawFrame(open, 0)], () => rawFrame(credit, 0, new Uint8Array(5)), /a credit without its 4-byte amount/],
    ['data after FIN', () => [rawFrame(open, 0), rawFrame(data, 0, new Uint8Array(8)), rawFrame(fin, 0)], () => rawFrame(data, 0, new Uint8Array(1)), /data on stream 0 after its end/],
    ['a second FIN', () => [rawFrame(open, 0), rawFrame(fin, 0)], () => rawFrame(fin, 0), /a second end of stream 0/],
    ['an open with a payload', () => [rawFrame(open, 0)], () => rawFrame(open, 1, new Uint8Array(1)), /an open with a payload/],
    ['more streams than maxStreams', () => [0, 1, 2, 3].map((id) => rawFrame(open, id)), () => rawFrame(open, 4), /more than 4 streams at once/],
    ['a FIN with a payload', () => [rawFrame(open, 0)], () => rawFrame(fin, 0, new Uint8Array(1)), /a fin with a payload/],
    ['a reset with a payload', () => [rawFrame(open, 0)], () => rawFrame(reset, 0, new Uint8Array(1)), /a reset with a payload/],
    ['a lost with a payload', () => [rawFrame(open, 0)], () => rawFrame(lost, 0, new Uint8Array(1)), /a lost with a payload/],
  ];
  it.each(cases)('%s', async (_, upTo, breaking, rule) => {
    const { mux, accepted, violations, feed } = acceptorFed();
    feed(...upTo());
    // Up to the limit, nothing is wrong.
    expect(violations).toEqual([]);
    expect(mux.isEnded).toBe(false);
    feed(breaking());
    expect(violations).toEqual([expect.stringMatching(rule)]);
    expect(mux.isEnded).toBe(true);
    expect(mux.size).toBe(0);
    // Every stream of the session has ended: a writer learns it at once.
    await expect(accepted[0]!.writable.getWriter().write(new Uint8Array(1))).rejects.toThrow();
    // And a frame after the end is not read at all: no second violation.
    feed(rawFrame(data, 0, new Uint8Array(1)));
    expect(violations).toHaveLength(1);
  });

  it('credit up to the window, after bytes were sent, is taken; one byte more is over it', async () => {
    const { violations, accepted, feed } = acceptorFed();
    feed(rawFrame(open, 0));
    const writer = accepted[0]!.writable.getWriter();
    await writer.write(new Uint8Array(100));
    feed(rawFrame(credit, 0, amount(60)), rawFrame(credit, 0, amount(40)));
    expect(violations).toEqual([]);
    feed(rawFrame(credit, 0, amount(1)));
    expect(violations).toEqual([expect.stringContaining('over its window')]);
  });
});
