import { afterEach, describe, expect, it, vi } from 'vitest';
import { AdmissionSlot } from '../../src/dispatcher/admission-slot.js';
import { RpcError } from '../../src/protocol/index.js';
import { liveCall, RecordingOutlet, stream, unary, withInput } from './support/fake-call.js';

// The call's life as a state machine (src/dispatcher/live-call.ts), over a recording
// outlet and connection: no transport, no server.

afterEach(() => vi.useRealTimers());

describe('a call is admitted once (CR-1)', () => {
  it('an input stream hears its first window, a stream under credit a 0 grant, once', () => {
    const input = liveCall(withInput, 0);
    expect(input.call.state).toBe('admitted');
    input.call.announce(100);
    input.call.announce(100);
    expect(input.call.state).toBe('running');
    expect(input.outlet.sent).toEqual([{ type: 'credit', bytes: 100 }]);
    const credited = liveCall(stream, 50);
    credited.call.announce(100);
    expect(credited.outlet.sent).toEqual([{ type: 'credit', bytes: 0 }]);
  });

  it('a unary call without credit is told nothing', () => {
    const { call, outlet } = liveCall(unary, undefined);
    call.announce(100);
    expect(call.state).toBe('running');
    expect(outlet.sent).toEqual([]);
  });

  it('a call that ends before it was announced tells its caller it was admitted first', () => {
    const { call, outlet } = liveCall(stream, 50);
    call.fail(new Error('no such host'));
    expect(outlet.types()).toEqual(['credit', 'error']);
  });

  it('a resumed call announced without a window hears no grant', () => {
    const { call, outlet } = liveCall(stream, 50);
    call.announce();
    call.complete();
    expect(outlet.types()).toEqual(['completed']);
  });
});

describe('output credit (§4.8)', () => {
  it('holds an item once the credit is spent and sends it when more is granted', () => {
    const { call, outlet } = liveCall(stream, 15);
    call.announce();
    call.next(1); // 15 > 0: sent, credit 5
    call.next(2); // 5 > 0: sent, credit -5
    call.next(3); // held
    expect(outlet.sent.map((e) => (e.type === 'output' ? e.output : e.type))).toEqual([1, 2]);
    expect(call.credit(4)).toBe(true); // -1: still held
    expect(outlet.sent).toHaveLength(2);
    call.credit(2); // 1 > 0
    expect(outlet.sent.map((e) => (e.type === 'output' ? e.output : e.type))).toEqual([1, 2, 3]);
  });

  it('the terminal event waits behind held items, and the call is settled only once they went', () => {
    const { call, outlet, host } = liveCall(stream, 5);
    call.announce();
    call.next(1);
    call.next(2);
    call.complete();
    expect(outlet.types()).toEqual(['output']);
    expect(call.ended).toBe(true);
    expect(call.settled).toBe(false);
    expect(host.told).toEqual(['ended']);
    call.credit(100);
    expect(outlet.types()).toEqual(['output', 'output', 'completed']);
    expect(call.settled).toBe(true);
    expect(host.told).toContain('settled');
  });

  it('a call that asked for no credit is not held and refuses a grant', () => {
    const { call, outlet } = liveCall(stream, undefined);
    for (let i = 0; i < 5; i++) call.next(i);
    expect(outlet.sent).toHaveLength(5);
    expect(call.credit(10)).toBe(false);
  });

  it('bytes the transport has not taken fill the call (BP-1), and it has room again once taken', async () => {
    const outlet = new RecordingOutlet(60);
    outlet.hold = true;
    const { call } = liveCall(stream, undefined, { outlet });
    call.next(1);
    expect(call.full).toBe(false);
    call.next(2);
    expect(call.full).toBe(true);
    expect(call.mustWait).toBe(true);
    let roomy = false;
    void call.waitForRoom().then(() => (roomy = true));
    outlet.take();
    await vi.waitFor(() => expect(roomy).toBe(true));
    expect(call.full).toBe(false);
  });
});

describe('the end of a call', () => {
  it('the first terminal event wins; nothing follows it (ERR-2, RES-2)', () => {
    const { call, outlet, host } = liveCall(stream, undefined);
    call.announce();
    call.complete();
    call.fail(new Error('late'));
    call.terminate(RpcError.of('TIMEOUT', 'late'));
    call.next(7);
    expect(outlet.types()).toEqual(['completed']);
    expect(host.told.filter((t) => t === 'ended')).toHaveLength(1);
    expect(call.state).toBe('ended');
  });

  it('the deadline ends the call with TIMEOUT and cancels its handler (DL-1)', () => {
    vi.useFakeTimers();
    const { call, outlet } = liveCall(stream, undefined);
    call.announce();
    const signal = call.signal;
    call.setDeadline(1000);
    vi.advanceTimersByTime(999);
    expect(call.ended).toBe(false);
    vi.advanceTimersByTime(1);
    expect(call.state).toBe('cancelled');
    expect(signal.aborted).toBe(true);
    const last = outlet.sent.at(-1);
    expect(last?.type === 'error' && last.error.code).toBe('TIMEOUT');
  });

  it('a call that ends first leaves its deadline unfired', () => {
    vi.useFakeTimers();
    const { call, outlet } = liveCall(stream, undefined);
    call.setDeadline(1000);
    call.announce();
    call.complete();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5000);
    expect(outlet.types()).toEqual(['completed']);
  });

  it('cancel aborts the handler, drops what waits for credit and sends nothing (ABT-1, ABT-2)', () => {
    const { call, outlet, host } = liveCall(stream, 5);
    call.announce();
    let tornDown = 0;
    call.teardown = () => tornDown++;
    call.next(1);
    call.next(2); // held
    call.cancel();
    call.credit(100);
    expect(outlet.types()).toEqual(['output']);
    expect(call.signal.aborted).toBe(true);
    expect(tornDown).toBe(1);
    expect(call.settled).toBe(true);
    expect(host.told.filter((t) => t !== 'settled')).toEqual(['ended']);
  });

  it('a call the dispatcher ends drops what waits for credit: its error goes at once', () => {
    const { call, outlet } = liveCall(stream, 5);
    call.announce();
    call.next(1);
    call.next(2); // held
    call.terminate(RpcError.of('SLOW_CONSUMER', 'overflow'));
    expect(outlet.types()).toEqual(['output', 'error']);
    expect(call.settled).toBe(true);
  });

  it('an ended call whose caller lets it go drops its held tail and is discarded', () => {
    const { call, outlet, host } = liveCall(stream, 5);
    call.announce();
    call.next(1);
    call.next(2);
    call.complete();
    call.cancel();
    call.credit(100);
    expect(outlet.types()).toEqual(['output']);
    expect(host.told.filter((t) => t !== 'settled')).toEqual(['ended', 'discarded']);
  });

  it('gives its identity place back once, when it ends, unless it handed it over (LIM-3)', () => {
    let released = 0;
    const { call } = liveCall(stream, undefined, { admission: new AdmissionSlot(() => released++) });
    call.complete();
    call.cancel();
    expect(released).toBe(1);
    const kept = liveCall(stream, undefined, { admission: new AdmissionSlot(() => released++) });
    const slot = kept.call.handOverAdmission();
    kept.call.complete();
    expect(released).toBe(1);
    slot.release();
    slot.release();
    expect(released).toBe(2);
  });
});

describe('input (§4.7)', () => {
  it('takes input within the credit, ends the call past it (CR-2), and refuses input after call.end (IN-3)', () => {
    const over = liveCall(withInput, undefined);
    over.call.announce(100);
    over.call.pushInput(1, 60);
    over.call.pushInput(2, 60); // 100 - 60 = 40 > 0: taken, credit -20
    expect(over.call.ended).toBe(false);
    over.call.pushInput(3, 1);
    const last = over.outlet.sent.at(-1);
    expect(last?.type === 'error' && last.error.code).toBe('CREDIT_EXCEEDED');
    const after = liveCall(withInput, undefined);
    after.call.announce(100);
    after.call.endInput();
    after.call.pushInput(1, 1);
    const end = after.outlet.sent.at(-1);
    expect(end?.type === 'error' && end.error.message).toBe('input after call.end');
  });

  it('an operation without an input stream refuses input (IN-2)', () => {
    const { call, outlet } = liveCall(stream, undefined);
    call.announce(100);
    call.pushInput(1, 1);
    const last = outlet.sent.at(-1);
    expect(last?.type === 'error' && last.error.code).toBe('INVALID_FRAME');
  });
});
