import { describe, expect, it } from 'vitest';
import { parseEnvelope, protocolCodes, RpcError } from '../../src/protocol/index.js';

describe('parseEnvelope', () => {
  it('names the offending field', () => {
    const r = parseEnvelope({ type: 'call.requested', id: 'a', payload: { operationId: 5 } });
    expect(r.kind).toBe('invalid');
    if (r.kind === 'invalid') {
      expect(r.error.field).toBe('payload.operationId');
      expect(r.error.message).toMatch(/^payload\.operationId: /);
      expect(r.error.callId).toBe('a');
    }
  });

  it('keeps the id of a frame it rejects when the id is readable, and none otherwise', () => {
    const bad = parseEnvelope({ type: 'call.error', id: 'q', payload: { code: 'X' } });
    expect(bad.kind === 'invalid' && bad.error.callId).toBe('q');
    const noId = parseEnvelope({ type: 'call.error', payload: {} });
    expect(noId.kind === 'invalid' && noId.error.callId).toBeUndefined();
  });

  it('reports unknown event types separately so receivers can ignore and count them', () => {
    expect(parseEnvelope({ type: 'call.progress', id: 'a', payload: {} })).toEqual({
      kind: 'unknown-type',
      type: 'call.progress',
      id: 'a',
    });
  });

  it('rejects ids over 128 bytes', () => {
    const r = parseEnvelope({ type: 'call.aborted', id: 'é'.repeat(65), payload: {} });
    expect(r.kind === 'invalid' && r.error.field).toBe('id');
  });

  it('allows extra request fields for forward compatibility', () => {
    const r = parseEnvelope({ type: 'call.requested', id: 'a', payload: { operationId: 'x', future: 1 } });
    expect(r.kind).toBe('event');
  });
});

describe('RpcError', () => {
  it('takes retryable from the table for protocol codes', () => {
    expect(RpcError.of('TIMEOUT', 't').retryable).toBe(true);
    expect(RpcError.of('NOT_FOUND', 'n').retryable).toBe(false);
    expect(new RpcError('CONTAINER_NOT_FOUND', 'c').retryable).toBe(false);
  });

  it('from(unknown) normalises anything to INTERNAL and keeps RpcErrors', () => {
    const e = RpcError.of('FORBIDDEN', 'no');
    expect(RpcError.from(e)).toBe(e);
    expect(RpcError.from(new Error('boom')).code).toBe('INTERNAL');
    expect(RpcError.from('text').message).toBe('text');
    expect(RpcError.from(undefined).code).toBe('INTERNAL');
  });

  it('round-trips through its payload', () => {
    const e = new RpcError('DOCKER_ERROR', 'engine said no', { details: { status: 500 }, retryable: true });
    const back = RpcError.fromPayload(e.toPayload());
    expect([back.code, back.message, back.retryable, back.details]).toEqual(['DOCKER_ERROR', 'engine said no', true, { status: 500 }]);
  });

  it('every table entry has a meaning', () => {
    for (const info of Object.values(protocolCodes)) expect(info.meaning.length).toBeGreaterThan(10);
  });
});
