import { describe, expect, it } from 'vitest';
import {
  codecForSubprotocol,
  codecs,
  jsonCodec,
  msgpackCodec,
  ProtocolError,
  subprotocols,
} from '../../src/protocol/index.js';

describe('codecs', () => {
  it('msgpack keeps Uint8Array values as bytes', () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const decoded = msgpackCodec.decode(msgpackCodec.encode({ data: bytes })) as { data: Uint8Array };
    expect(decoded.data).toBeInstanceOf(Uint8Array);
    expect(Array.from(decoded.data)).toEqual(Array.from(bytes));
  });

  it('msgpack frames decode without per-connection state (no records)', () => {
    const a = msgpackCodec.encode({ type: 'call.completed', id: 'a', payload: {} });
    const b = msgpackCodec.encode({ type: 'call.completed', id: 'b', payload: {} });
    // The second frame decodes alone, and neither carries a record definition (0xd4 0x72 ...).
    expect(msgpackCodec.decode(b)).toEqual({ type: 'call.completed', id: 'b', payload: {} });
    expect(a[0]).toBe(0x83); // a plain fixmap of 3 entries
  });

  it('msgpack encodes undefined as nil so any peer can read it', () => {
    expect(Array.from(msgpackCodec.encode(undefined))).toEqual([0xc0]);
  });

  it('msgpack rejects trailing bytes and truncation with a typed error', () => {
    expect(() => msgpackCodec.decode(new Uint8Array([0x01, 0x02]))).toThrow(ProtocolError);
    expect(() => msgpackCodec.decode(new Uint8Array([0x82, 0xa1]))).toThrow(ProtocolError);
    expect(() => msgpackCodec.decode(new Uint8Array(0))).toThrow(ProtocolError);
  });

  it('json carries bytes as {"$base64"} and restores them', () => {
    const bytes = new Uint8Array([0, 255, 10]);
    const encoded = jsonCodec.encode({ data: bytes, buf: Buffer.from([1]) });
    expect(new TextDecoder().decode(encoded)).toBe('{"data":{"$base64":"AP8K"},"buf":{"$base64":"AQ=="}}');
    const decoded = jsonCodec.decode(encoded) as { data: Uint8Array };
    expect(Array.from(decoded.data)).toEqual([0, 255, 10]);
  });

  it('json restores bytes whose tag is spelled with \\u escapes, and leaves text without the tag as JSON.parse reads it', () => {
    const escaped = new TextEncoder().encode('{"a":{"\\u0024base64":"AP8K"},"b":{"\\u0024base\\u0036\\u0034":"AQ=="}}');
    expect(jsonCodec.decode(escaped)).toEqual({ a: new Uint8Array([0, 255, 10]), b: new Uint8Array([1]) });
    const plain = '{"text":"base64 is a word","n":[1,2,{"x":null}]}';
    expect(jsonCodec.decode(new TextEncoder().encode(plain))).toEqual(JSON.parse(plain));
  });

  it('json rejects invalid UTF-8 and invalid JSON with a typed error', () => {
    expect(() => jsonCodec.decode(new Uint8Array([0xff]))).toThrowError(/UTF-8/);
    expect(() => jsonCodec.decode(new TextEncoder().encode('{'))).toThrowError(/not valid JSON/);
  });

  it('maps subprotocol strings to codecs and nothing else', () => {
    expect(codecForSubprotocol(subprotocols.msgpack)).toBe(codecs.msgpack);
    expect(codecForSubprotocol(subprotocols.json)).toBe(codecs.json);
    expect(codecForSubprotocol('callwire.v2.msgpack')).toBeUndefined();
  });
});
