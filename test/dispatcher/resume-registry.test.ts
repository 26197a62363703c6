import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { CallTable, defineOperation, Registry, resolveLimits, silentLogger, type Identity, type ResumeSeam } from '../../src/dispatcher/index.js';
import { AdmissionSlot } from '../../src/dispatcher/admission-slot.js';
import { IdentityLedger } from '../../src/dispatcher/identity-ledger.js';
import { IdentityOutbound } from '../../src/dispatcher/identity-outbound.js';
import { ResumeRegistry } from '../../src/dispatcher/resume-registry.js';
import { RpcError } from '../../src/protocol/index.js';
import { liveCall, RecordingHost, RecordingOutlet, stream } from './support/fake-call.js';

// Where resumable calls live (§4.9): src/dispatcher/resume-registry.ts, over calls on a
// recording outlet; the seam through a CallTable that has no transport.

afterEach(() => vi.useRealTimers());

const alice: Identity = { subject: 'alice', scopes: [] };
const bob: Identity = { subject: 'bob', scopes: [] };
const limits = resolveLimits({ maxResumeMs: 10_000 });

function tokenOf(outlet: RecordingOutlet): string {
  const event = outlet.sent.find((e) => e.type === 'resumable');
  if (event?.type !== 'resumable') throw new Error('no token');
  return event.token;
}

function resumable(registry: ResumeRegistry, admission = AdmissionSlot.none()) {
  const made = liveCall(stream, 1000, { admission });
  registry.offer(made.call, alice, 5000);
  made.call.announce(100);
  return { ...made, token: tokenOf(made.outlet) };
}

describe('ResumeRegistry', () => {
  it('offers a token first, capped grace, and keeps output while the call has no connection', () => {
    const registry = new ResumeRegistry(limits, silentLogger);
    const { call, outlet, token } = resumable(registry);
    expect(outlet.sent[0]).toEqual({ type: 'resumable', token, graceMs: 5000 });
    registry.detach(call);
    expect(registry.detached).toBe(1);
    call.next(1);
    call.next(2);
    expect(outlet.types()).toEqual(['resumable', 'credit']);
    const next = new RecordingOutlet();
    const claimed = registry.claim(token, call.id, alice);
    expect(claimed).toBe(call);
    const host = new RecordingHost();
    expect(registry.takeUp(call, 0, () => call.moveTo(host, next, 1000))).toBeUndefined();
    expect(next.types()).toEqual(['resumed', 'output#1', 'output#2']);
    expect(registry.detached).toBe(0);
  });

  it('refuses another id, another identity, an unknown token alike (RSM-4), and a missing scope as FORBIDDEN (RSM-9)', () => {
    const registry = new ResumeRegistry(limits, silentLogger);
    const { call, token } = resumable(registry);
    for (const refused of [registry.claim(token, 'other', alice), registry.claim(token, call.id, bob), registry.claim('nope', call.id, alice)]) {
      expect(refused instanceof RpcError && refused.code).toBe('NOT_FOUND');
    }
    call.identityChecks.push((identity) => (identity?.scopes.includes('host:a') ? undefined : RpcError.of('FORBIDDEN', 'missing scope: host:a')));
    const denied = registry.claim(token, call.id, alice);
    expect(denied instanceof RpcError && denied.code).toBe('FORBIDDEN');
    expect(call.ended).toBe(false);
  });

  it('a call not resumed within its grace is cancelled, its token gone and its place given back (RSM-6, LIM-3)', () => {
    vi.useFakeTimers();
    let released = 0;
    const registry = new ResumeRegistry(limits, silentLogger);
    const { call, token } = resumable(registry, new AdmissionSlot(() => released++));
    call.complete(); // the call's end does not give the place back: the registry holds it
    registry.detach(call);
    expect(released).toBe(0);
    vi.advanceTimersByTime(4999);
    expect(registry.named(token)).toBe(call);
    vi.advanceTimersByTime(1);
    expect(registry.named(token)).toBeUndefined();
    expect(registry.size).toBe(0);
    expect(released).toBe(1);
  });

  it('a resume that can no longer be given what follows its position ends the call, never a silent gap', () => {
    const registry = new ResumeRegistry(limits, silentLogger);
    const { call, token } = resumable(registry);
    call.next(1);
    call.next(2);
    call.credit(0, 2); // the caller has both: they are let go
    registry.detach(call);
    registry.claim(token, call.id, alice);
    const refused = registry.takeUp(call, 0, () => undefined);
    expect(refused?.code).toBe('UNAVAILABLE');
    expect(call.state).toBe('cancelled');
    expect(registry.named(token)).toBeUndefined();
  });

  it('retains an ended call that sent everything on its connection until its caller lets it go', () => {
    const registry = new ResumeRegistry(limits, silentLogger);
    const { call, token } = resumable(registry);
    const holder = {};
    call.complete();
    registry.ended(call, holder);
    expect(registry.heldOn(holder, call.id)).toBe(call);
    expect(registry.heldOn({}, call.id)).toBeUndefined();
    call.cancel(); // the caller lets it go (ABT-2): its record goes
    expect(registry.heldOn(holder, call.id)).toBeUndefined();
    expect(registry.named(token)).toBeUndefined();
  });

  it('a connection that closes cleanly lets its retained calls go; a lost one leaves them to wait', () => {
    const registry = new ResumeRegistry(limits, silentLogger);
    const clean = resumable(registry);
    const lost = resumable(registry);
    const [a, b] = [{}, {}];
    clean.call.complete();
    lost.call.complete();
    registry.ended(clean.call, a);
    registry.ended(lost.call, b);
    registry.release(a, 'clean');
    registry.release(b, 'lost');
    expect(registry.named(clean.token)).toBeUndefined();
    expect(registry.named(lost.token)).toBe(lost.call);
    expect(registry.detached).toBe(1);
  });
});

describe('the resume seam (ResumeSeam)', () => {
  function table(seam: ResumeSeam) {
    const relayed = defineOperation({
      name: 'relayed/stream',
      kind: 'subscription',
      input: z.null(),
      output: z.number(),
      resumeSeam: seam,
      handler: () => (async function* () {})(),
    });
    const registry = new Registry().register(relayed);
    const resume = new ResumeRegistry(limits, silentLogger, seam);
    const calls = new CallTable({ rules: { registry, limits, authenticate: undefined, ledger: new IdentityLedger(limits), outbound: new IdentityOutbound(limits.maxOutboundBytesPerIdentity) }, logger: silentLogger, validateOutput: true, accepting: () => true, resume });
    return { calls, resume };
  }

  it('offers a token the registry does not know to the seam, which takes the call up; it is resumable once upstream has it', async () => {
    const asked: string[] = [];
    let resumed: ((inputSeq: number) => void) | undefined;
    const seam: ResumeSeam = {
      adopt: (token, identity) => {
        asked.push(`${token}:${identity?.subject}`);
        if (token !== 'upstream-token') return undefined;
        return {
          operation: 'relayed/stream',
          graceMs: 3000,
          source: (seq, ctx) => {
            resumed = (inputSeq) => ctx.resumption?.resumed(inputSeq);
            return (async function* () {
              await new Promise((r) => setTimeout(r, 10));
              yield seq + 100;
            })();
          },
        };
      },
    };
    const { calls, resume } = table(seam);
    const outlet = new RecordingOutlet();
    const unknown = calls.resume('x', { token: 'other', seq: 0, credit: 1000 }, alice, outlet);
    expect(unknown instanceof RpcError && unknown.code).toBe('NOT_FOUND');
    const call = calls.resume('c', { token: 'upstream-token', seq: 7, credit: 1000 }, alice, outlet);
    expect(asked).toEqual(['other:alice', 'upstream-token:alice']);
    expect(call instanceof RpcError).toBe(false);
    expect(resume.named('upstream-token')).toBeUndefined(); // not before upstream has it
    resumed!(3);
    expect(resume.named('upstream-token')).toBe(call);
    await vi.waitFor(() => expect(outlet.types()).toEqual(['resumed', 'output#8', 'completed']));
    expect(outlet.sent[0]).toEqual({ type: 'resumed', inputSeq: 3, inputCredit: 0 });
  });
});
