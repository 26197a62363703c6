import { RpcError } from '../protocol/index.js';
import { describeCaller, type Identity } from './identity.js';
import type { DispatcherLimits } from './limits.js';

interface Held {
  calls: number;
  execs: number;
}

/**
 * Live calls and exec sessions per identity, over every connection of a dispatcher
 * (spec/PROTOCOL.md §9, LIM-3): one caller cannot take the whole server by opening
 * more connections. An identity is its subject; every anonymous caller is one
 * identity, and so is every caller of a server without tokens (`local`).
 */
export class IdentityLedger {
  private readonly held = new Map<string | null, Held>();

  constructor(private readonly limits: Pick<DispatcherLimits, 'maxCallsPerIdentity' | 'maxExecSessionsPerIdentity'>) {}

  /**
   * Takes a call, and an exec session when `exec`, for `identity`; or the refusal when
   * the identity is at a cap. The function returned gives them back; only its first
   * run counts.
   */
  take(identity: Identity | null, exec: boolean): (() => void) | RpcError {
    const key = identity?.subject ?? null;
    const held = this.held.get(key) ?? { calls: 0, execs: 0 };
    const who = describeCaller(key);
    if (held.calls >= this.limits.maxCallsPerIdentity) {
      return RpcError.of('LIMIT_EXCEEDED', `${who} already has ${this.limits.maxCallsPerIdentity} calls live (maxCallsPerIdentity)`);
    }
    if (exec && held.execs >= this.limits.maxExecSessionsPerIdentity) {
      return RpcError.of('LIMIT_EXCEEDED', `${who} already has ${this.limits.maxExecSessionsPerIdentity} exec sessions live (maxExecSessionsPerIdentity)`);
    }
    held.calls++;
    if (exec) held.execs++;
    this.held.set(key, held);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      held.calls--;
      if (exec) held.execs--;
      if (held.calls === 0) this.held.delete(key);
    };
  }
}
