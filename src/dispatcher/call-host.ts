import type { Logger } from './identity.js';
import type { LiveCall } from './live-call.js';

/** What every call of a server is held to, whatever connection it is on. */
export interface CallSettings {
  /** RES-4: outputs are checked against the operation's output schema. */
  readonly validateOutput: boolean;
  readonly logger: Logger;
}

/** The connection a call is on (CallTable): its flow, and where the call is kept while it has anything to send. */
export interface CallHost {
  /** More than `maxOutboundBytesPerConnection` bytes of all calls wait for the transport (BP-4). */
  readonly congested: boolean;
  /** Calls `call.roomOnConnection()` once the connection is no longer congested. */
  waitUncongested(call: LiveCall): void;
  /** The call has ended, its terminal frame queued (or none, when cancelled): its id is free again. */
  ended(call: LiveCall): void;
  /** The ended call has nothing more to send (its held frames went, or were dropped). */
  settled(call: LiveCall): void;
  /** Delivery failed: the connection is gone. */
  lost(error: unknown): void;
  /** The ended call's caller wants nothing more of it. */
  discarded(call: LiveCall): void;
  /** The call moves to another connection (a resume, §4.9): forget it without cancelling it. */
  handOver(call: LiveCall): void;
}

/**
 * Where a call is in its life: admitted, with its caller not yet told (CR-1); running;
 * ended, its terminal event decided; or cancelled, its handler aborted (ABT-1).
 */
export type CallLife = 'admitted' | 'running' | 'ended' | 'cancelled';
