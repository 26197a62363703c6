import { describe, expect, it } from 'vitest';
import { decodeLink, encodeLink, LinkReceiver, LinkSender, type LinkMessage } from '../../src/fleet/link-message.js';

const sent = (maxPayload: number): { sender: LinkSender; messages: LinkMessage[] } => {
  const messages: LinkMessage[] = [];
  const sender = new LinkSender((data) => {
    expect(data.byteLength).toBeLessThanOrEqual(maxPayload);
    messages.push(decodeLink(data)!);
  }, 'gw1.7', maxPayload);
  return { sender, messages };
};

describe('link messages between a gateway and an agent (docs/fleet.md)', () => {
  it('round-trips kind, sequence, connection id and body', () => {
    const message = decodeLink(encodeLink('frame', 70000, 'abc.1f', new Uint8Array([1, 2, 3])));
    expect(message).toMatchObject({ kind: 'frame', seq: 70000, vc: 'abc.1f' });
    expect([...message!.body]).toEqual([1, 2, 3]);
    expect(decodeLink(new Uint8Array([9, 0, 0, 0, 1, 1, 65]))).toBeUndefined();
    expect(decodeLink(new Uint8Array([1, 0, 0]))).toBeUndefined();
  });

  it('a frame larger than the NATS max_payload goes in parts, each within it, and is joined whole', () => {
    const { sender, messages } = sent(4096);
    const frame = Uint8Array.from({ length: 20_000 }, (_, i) => (i * 7) % 251);
    sender.send('frame', frame);
    sender.send('ping');
    expect(messages.map((m) => m.kind)).toEqual(['part', 'part', 'part', 'part', 'part', 'frame', 'ping']);
    const receiver = new LinkReceiver(1 << 20);
    const results = messages.map((m) => receiver.accept(m));
    expect(results.slice(0, 5)).toEqual(['pending', 'pending', 'pending', 'pending', 'pending']);
    const whole = results[5] as { kind: string; body: Uint8Array };
    expect(whole.kind).toBe('frame');
    expect(Buffer.compare(Buffer.from(whole.body), Buffer.from(frame))).toBe(0);
    expect(results[6]).toMatchObject({ kind: 'ping' });
  });

  it('a missing message is a gap, and so is one seen twice', () => {
    const { sender, messages } = sent(1 << 20);
    for (let i = 0; i < 4; i++) sender.send('frame', new Uint8Array([i]));
    const lost = new LinkReceiver(1 << 20);
    expect(lost.accept(messages[0]!)).toMatchObject({ kind: 'frame' });
    expect(lost.accept(messages[2]!)).toBe('gap');
    const doubled = new LinkReceiver(1 << 20);
    doubled.accept(messages[0]!);
    doubled.accept(messages[1]!);
    expect(doubled.accept(messages[1]!)).toBe('gap');
  });

  it('parts that add up to more than the largest frame are refused as a gap, not buffered', () => {
    const { sender, messages } = sent(2048);
    sender.send('frame', new Uint8Array(10_000));
    const receiver = new LinkReceiver(5000);
    const results = messages.map((m) => receiver.accept(m));
    expect(results).toContain('gap');
  });
});

describe('a receiver that joins several parted frames in a row', () => {
  it('starts each frame from nothing: three 3 KB frames in parts, each under a 4 KB bound, are all joined whole', () => {
    // Each frame alone fits the receiver's bound; the three together do not. A receiver that kept
    // counting the parts of the frames it already joined would refuse the second or third as a gap.
    const { sender, messages } = sent(1024 + 6 + 255 + 1);
    const frames = [1, 2, 3].map((n) => Uint8Array.from({ length: 3000 }, (_, i) => (i * n) % 251));
    for (const frame of frames) sender.send('frame', frame);
    expect(messages.filter((m) => m.kind === 'part').length).toBeGreaterThanOrEqual(6);
    const receiver = new LinkReceiver(4000);
    const joined = messages.map((m) => receiver.accept(m)).filter((r) => r !== 'pending');
    expect(joined).not.toContain('gap');
    expect(joined.map((r) => Buffer.from((r as { body: Uint8Array }).body))).toEqual(frames.map((f) => Buffer.from(f)));
  });
});
