import { bindLogger, type Identity, type Logger } from './identity.js';
import type { IdentityCheck } from './access.js';
import type { LiveCall } from './live-call.js';
import type { CallContext } from './operation.js';
import type { SeamResumption } from './resume-seam.js';

/**
 * What a handler is given of its call. A class, not an object literal: V8 builds a literal
 * with getters in its runtime, and at 64 unary calls in flight that was the server's largest
 * cost of its own (bench/PROFILE.md "Unary (WebSocket)"). Its signal and logger are made
 * when first read: most handlers read neither.
 */
export class LiveCallContext implements CallContext {
  readonly callId: string;
  readonly operation: string;
  readonly input: AsyncIterable<unknown> | undefined;
  private boundLogger: Logger | undefined;

  constructor(
    private readonly call: LiveCall,
    private readonly tableLogger: Logger,
    readonly identity: Identity | null,
    readonly deadlineAt: number | undefined,
    readonly resumption: SeamResumption | undefined,
    /** The call is made for another (a fan-out's target): the checks made of its caller bind that one's resume too. */
    private readonly parentRequires?: (check: IdentityCheck) => void,
  ) {
    this.callId = call.id;
    this.operation = call.op.name;
    this.input = call.input;
  }

  get signal(): AbortSignal {
    return this.call.signal;
  }

  get logger(): Logger {
    return (this.boundLogger ??= bindLogger(this.tableLogger, { callId: this.callId, operation: this.operation }));
  }

  routedTo(host: string): void {
    try {
      this.call.observer?.routed?.(host);
    } catch {
      // An observer's failure is its own (combineObservers logs it): the call goes on.
    }
  }

  requireOnResume(check: IdentityCheck): void {
    this.call.identityChecks.push(check);
    this.parentRequires?.(check);
  }

  heldBy(): Identity | null {
    return this.call.resumedBy ? this.call.resumedBy.identity : this.identity;
  }
}

/**
 * `ctx` with some of its members replaced (a signal that also fires on a deadline of the
 * handler's own, an input stream passed through a filter): the rest, getters and methods too,
 * stays `ctx`'s. A spread (`{ ...ctx }`) would copy only its fields and lose its signal.
 */
export function deriveContext(ctx: CallContext, overrides: Partial<CallContext>): CallContext {
  const members: PropertyDescriptorMap = {};
  for (const [key, value] of Object.entries(overrides)) members[key] = { value, enumerable: true };
  return Object.create(ctx, members) as CallContext;
}
