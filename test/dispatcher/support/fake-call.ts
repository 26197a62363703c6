import { z } from 'zod';
import { defineOperation, silentLogger, type Operation } from '../../../src/dispatcher/index.js';
import { AdmissionSlot } from '../../../src/dispatcher/admission-slot.js';
import type { CallHost } from '../../../src/dispatcher/call-host.js';
import type { CallEvent, CallOutlet, Sized } from '../../../src/dispatcher/call-outlet.js';
import { LiveCall } from '../../../src/dispatcher/live-call.js';

/** An event as the fake outlet encodes it: every frame is `size` bytes. */
export interface FakeFrame extends Sized {
  readonly event: CallEvent;
}

/** An outlet that records what it was sent; the transport takes each frame at once unless `hold` is set. */
export class RecordingOutlet implements CallOutlet<FakeFrame> {
  readonly sent: CallEvent[] = [];
  hold = false;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size = 10) {}

  encode(event: CallEvent): FakeFrame {
    return { byteLength: this.size, event };
  }

  send(frame: FakeFrame): Promise<void> {
    this.sent.push(frame.event);
    if (!this.hold) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** The transport takes every frame it held. */
  take(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }

  types(): string[] {
    return this.sent.map((e) => (e.type === 'output' && e.seq !== undefined ? `output#${e.seq}` : e.type));
  }
}

/** A connection that records what its calls tell it. */
export class RecordingHost implements CallHost {
  congested = false;
  readonly told: string[] = [];

  waitUncongested(): void {
    this.told.push('waitUncongested');
  }
  ended(): void {
    this.told.push('ended');
  }
  settled(): void {
    this.told.push('settled');
  }
  lost(): void {
    this.told.push('lost');
  }
  discarded(): void {
    this.told.push('discarded');
  }
  handOver(): void {
    this.told.push('handOver');
  }
}

export const stream: Operation = defineOperation({ name: 't/stream', kind: 'subscription', input: z.null(), output: z.number(), handler: () => [] as never });
export const withInput: Operation = defineOperation({
  name: 't/input',
  kind: 'subscription',
  input: z.null(),
  output: z.number(),
  inputStream: z.number(),
  handler: () => [] as never,
});
export const unary: Operation = defineOperation({ name: 't/unary', kind: 'query', input: z.null(), output: z.number(), handler: () => 1 });

export function liveCall(op: Operation, credit: number | undefined, options: { outlet?: RecordingOutlet; host?: RecordingHost; admission?: AdmissionSlot; id?: string } = {}) {
  const outlet = options.outlet ?? new RecordingOutlet();
  const host = options.host ?? new RecordingHost();
  const call = new LiveCall(options.id ?? 'c1', op, 100, outlet, host, credit, { validateOutput: true, logger: silentLogger }, options.admission ?? AdmissionSlot.none());
  return { call, outlet, host };
}
