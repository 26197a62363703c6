import { describe, expect, it } from 'vitest';
import { BridgeMessageError, bridgeLine, parseBridgeLine, sameSecret } from '../../src/webtransport/bridge-protocol.js';

const secret = 'ab'.repeat(32);

describe('the HTTP/3 bridge protocol (both sides parse with it)', () => {
  it('parses what it writes, for every kind a connection may open with, and its answers', () => {
    const session = { type: 'session', secret, url: 'https://127.0.0.1:7071/callwire', certHash: 'cd'.repeat(32), idleTimeoutMs: 5000 } as const;
    expect(parseBridgeLine(bridgeLine<'session'>(session).trimEnd(), ['session'])).toEqual(session);
    const refused = { type: 'refused', status: 404, reason: 'no WebTransport endpoint' } as const;
    expect(parseBridgeLine(bridgeLine<'refused'>(refused).trimEnd(), ['accepted', 'refused'])).toEqual(refused);
  });

  it.each([
    ['not JSON', '{"type":"accepted"'],
    ['a kind not allowed here', JSON.stringify({ type: 'refused', reason: '' })],
    ['the old per-stream opener', JSON.stringify({ type: 'stream', secret, session: 's', n: 0 })],
    ['a field of the wrong type', JSON.stringify({ type: 'accepted', id: 1 })],
    ['a field it does not define', JSON.stringify({ type: 'accepted', id: 'a', extra: true })],
    ['a missing field', JSON.stringify({ type: 'accepted' })],
    ['an array', '[1]'],
    ['null', 'null'],
  ])('refuses %s', (_, line) => {
    expect(() => parseBridgeLine(line, ['accepted'])).toThrow(BridgeMessageError);
  });

  it('refuses a secret or a certificate hash that is not 32 bytes of lowercase hex', () => {
    for (const bad of ['ab'.repeat(31), 'AB'.repeat(32), 'zz'.repeat(32), `${'ab'.repeat(32)}00`]) {
      expect(() => parseBridgeLine(JSON.stringify({ type: 'session', secret: bad, url: 'https://h/callwire' }), ['session'])).toThrow(BridgeMessageError);
      expect(() => parseBridgeLine(JSON.stringify({ type: 'session', secret, url: 'https://h/callwire', certHash: bad }), ['session'])).toThrow(BridgeMessageError);
    }
  });

  it('sameSecret is true for the secret only: not for one character off anywhere, a prefix, or a longer string', () => {
    expect(sameSecret(secret, secret)).toBe(true);
    for (let i = 0; i < secret.length; i++) expect(sameSecret(`${secret.slice(0, i)}0${secret.slice(i + 1)}`, secret)).toBe(false);
    expect(sameSecret(secret.slice(0, -1), secret)).toBe(false);
    expect(sameSecret(`${secret}0`, secret)).toBe(false);
    expect(sameSecret('', secret)).toBe(false);
  });
});
