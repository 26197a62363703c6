import { describe, expect, it } from 'vitest';
import { deriveContext, LiveCallContext } from '../../src/dispatcher/call-context.js';
import { recordingLogger } from '../support/recording-logger.js';
import { liveCall, stream } from './support/fake-call.js';

// What a handler is given of its call (src/dispatcher/call-context.ts), over a call of the
// state machine's own tests: no transport, no server.

describe("a handler's context", () => {
  it("names its call, reads the call's signal, binds its logger to the call, and hands the call what it routes and requires", () => {
    const { call } = liveCall(stream, 50, { id: 'c7' });
    const routed: string[] = [];
    call.observer = { routed: (host) => routed.push(host) };
    const { logger, lines } = recordingLogger();
    const ctx = new LiveCallContext(call, logger, null, 1234, undefined);
    expect([ctx.callId, ctx.operation, ctx.identity, ctx.deadlineAt, ctx.resumption]).toEqual(['c7', stream.name, null, 1234, undefined]);
    ctx.logger.info('hello', { n: 1 });
    expect(lines).toEqual([{ level: 'info', message: 'hello', fields: { callId: 'c7', operation: stream.name, n: 1 } }]);
    ctx.routedTo('b');
    expect(routed).toEqual(['b']);
    const check = () => undefined;
    ctx.requireOnResume(check);
    expect(call.identityChecks).toEqual([check]);
    expect(ctx.signal.aborted).toBe(false);
    call.cancel();
    expect(ctx.signal.aborted).toBe(true);
  });

  it('an observer that throws on routedTo does not reach the handler', () => {
    const { call } = liveCall(stream, 50);
    call.observer = {
      routed: () => {
        throw new Error('observer broke');
      },
    };
    expect(() => new LiveCallContext(call, recordingLogger().logger, null, undefined, undefined).routedTo('a')).not.toThrow();
  });

  it('deriveContext: another signal and input, and everything else, getters and methods too, still the call\'s', () => {
    const { call } = liveCall(stream, 50, { id: 'c8' });
    const routed: string[] = [];
    call.observer = { routed: (host) => routed.push(host) };
    const { logger, lines } = recordingLogger();
    const ctx = new LiveCallContext(call, logger, { subject: 'alice', scopes: [] }, undefined, undefined);
    const late = new AbortController();
    const input = (async function* () {})();
    const derived = deriveContext(ctx, { signal: late.signal, input });
    expect(derived.signal).toBe(late.signal);
    expect(derived.input).toBe(input);
    expect([derived.callId, derived.operation, derived.identity]).toEqual(['c8', stream.name, { subject: 'alice', scopes: [] }]);
    derived.logger.warn('slow host');
    expect(lines).toEqual([{ level: 'warn', message: 'slow host', fields: { callId: 'c8', operation: stream.name } }]);
    derived.routedTo?.('a');
    expect(routed).toEqual(['a']);
    derived.requireOnResume?.(() => undefined);
    expect(call.identityChecks).toHaveLength(1);
    expect(ctx.signal, 'the original keeps its own').not.toBe(late.signal);
  });
});
