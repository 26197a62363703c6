import { bindLogger, type Identity, type Logger } from './identity.js';
import type { LiveCall } from './live-call.js';
import type { CallContext, ResumeRelay } from './operation.js';

/**
 * A handler's view of its call (CallContext). A class, not an object literal with
 * getters: one is made for every call, and a literal's getters are defined anew each
 * time. The signal and the logger are made when first read: most handlers read neither.
 */
export class LiveCallContext implements CallContext {
  private boundLogger: Logger | undefined;
  readonly input: CallContext['input'];

  constructor(
    private readonly call: LiveCall,
    private readonly tableLogger: Logger,
    readonly identity: Identity | null,
    readonly deadlineAt: number | undefined,
    readonly relay: ResumeRelay | undefined,
  ) {
    this.input = call.input;
  }

  get callId(): string {
    return this.call.id;
  }

  get operation(): string {
    return this.call.op.name;
  }

  get signal(): AbortSignal {
    return this.call.signal;
  }

  get logger(): Logger {
    return (this.boundLogger ??= bindLogger(this.tableLogger, { callId: this.call.id, operation: this.call.op.name }));
  }
}
