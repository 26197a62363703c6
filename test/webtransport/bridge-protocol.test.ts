import { describe, expect, it } from 'vitest';
import { BridgeMessageError, bridgeLine, parseBridgeLine, sameSecret } from '../../src/webtransport/bridge-protocol.js';

const secret = 'ab'.repeat(32);

describe('the HTTP/3 bridge protocol (both sides parse with it)', () => {
  it('parses what it writes, for every kind a connection may open with', () => {
    const session = { type: 'session', secret, url: 'https://127.0.0.1:7071/callwire', certHash: 'cd'.repeat(32), idleTimeoutMs: 5000 } as const;
    expect(parseBridgeLine(bridgeLine<'session'>(session).trimEnd(), ['session', 'stream'])).toEqual(session);
    const stream = { type: 'stream', secret, session: 'one', n: 3 } as const;
    expect(parseBridgeLine(bridgeLine<'stream'>(stream).trimEnd(), ['session', 'stream'])).toEqual(stream);
  });

  it('a session\'s control lines from the server\'s edge: `lost` carries nothing, and a `lost` with fields is refused', () => {
    expect(parseBridgeLine(bridgeLine<'lost'>({ type: 'lost' }).trimEnd(), ['reset', 'lost'])).toEqual({ type: 'lost' });
    expect(() => parseBridgeLine(JSON.stringify({ type: 'lost', n: 1 }), ['reset', 'lost'])).toThrow(BridgeMessageError);
    // Where only resets are expected (the client's side hears `close`, never `lost`), it is refused.
    expect(() => parseBridgeLine(JSON.stringify({ type: 'lost' }), ['reset', 'close'])).toThrow(BridgeMessageError);
  });

  it.each([
    ['not JSON', '{"type":"reset"'],
    ['a kind not allowed here', JSON.stringify({ type: 'close', code: 0, reason: '' })],
    ['the old shape, without a type', JSON.stringify({ reset: 1 })],
    ['a field of the wrong type', JSON.stringify({ type: 'reset', n: '1' })],
    ['a negative stream number', JSON.stringify({ type: 'reset', n: -1 })],
    ['a fraction', JSON.stringify({ type: 'reset', n: 1.5 })],
    ['a field it does not define', JSON.stringify({ type: 'reset', n: 1, extra: true })],
    ['a missing field', JSON.stringify({ type: 'reset' })],
    ['an array', '[1]'],
    ['null', 'null'],
  ])('refuses %s', (_, line) => {
    expect(() => parseBridgeLine(line, ['reset'])).toThrow(BridgeMessageError);
  });

  it('refuses a secret or a certificate hash that is not 32 bytes of lowercase hex', () => {
    for (const bad of ['ab'.repeat(31), 'AB'.repeat(32), 'zz'.repeat(32), `${'ab'.repeat(32)}00`]) {
      expect(() => parseBridgeLine(JSON.stringify({ type: 'stream', secret: bad, session: 's', n: 0 }), ['stream'])).toThrow(BridgeMessageError);
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
