import { RpcError } from '../protocol/index.js';
import type { Identity, Logger } from './identity.js';
import { IdentityLedger } from './identity-ledger.js';
import type { Operation } from './operation.js';
import { resolveLimits, type SessionLimits } from './limits.js';
import type { Registry } from './registry.js';
import { Session } from './session.js';
import type { SessionTransport } from './transport.js';

export interface DispatcherOptions {
  readonly registry: Registry;
  /** Resolves a bearer token (upgrade header or per-call `auth_token`); unknown tokens → undefined. */
  readonly authenticate?: (token: string) => Identity | undefined;
  /** Identity of callers without a token; default anonymous (`null`). */
  readonly anonymousIdentity?: Identity | null;
  readonly limits?: Partial<SessionLimits>;
  readonly logger?: Logger;
  /** Validate every output against the operation's output schema (RES-4). Default true. */
  readonly validateOutput?: boolean;
  /** Whether a call to `op` runs a command, counted against `maxExecSessionsPerIdentity` (LIM-3). Default: none does. */
  readonly isExecSession?: (op: Operation) => boolean;
}

/**
 * Where sessions are made: one per connection, every transport alike (WebSocket,
 * WebTransport, the in-memory connection, and embedders' own). It holds the open
 * sessions and shuts them all down together.
 */
export interface Dispatcher {
  readonly registry: Registry;
  readonly limits: SessionLimits;
  readonly logger: Logger | undefined;
  readonly authenticate: ((token: string) => Identity | undefined) | undefined;
  readonly anonymousIdentity: Identity | null;
  /** The open sessions; a session leaves this set when it closes. */
  readonly sessions: ReadonlySet<Session>;
  /** False once shutdown has begun: transports refuse new connections. */
  readonly accepting: boolean;
  /** A session for a new connection; `identity` defaults to the anonymous identity. */
  open(transport: SessionTransport, identity?: Identity | null): Session;
  /** Refuses new calls, lets live ones end within `graceMs`, then ends the rest with UNAVAILABLE. */
  shutdown(graceMs?: number): Promise<void>;
}

export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const sessions = new Set<Session>();
  const limits = resolveLimits(options.limits);
  const ledger = new IdentityLedger(limits);
  let accepting = true;
  return {
    registry: options.registry,
    limits,
    logger: options.logger,
    authenticate: options.authenticate,
    anonymousIdentity: options.anonymousIdentity ?? null,
    sessions,
    get accepting() {
      return accepting;
    },
    open(transport, identity = options.anonymousIdentity ?? null) {
      if (!accepting) throw new RpcError('UNAVAILABLE', 'the server is shutting down');
      const session: Session = new Session({
        registry: options.registry,
        transport,
        identity,
        authenticate: options.authenticate,
        limits,
        ...(options.logger ? { logger: options.logger } : {}),
        ...(options.validateOutput === undefined ? {} : { validateOutput: options.validateOutput }),
        onClose: () => sessions.delete(session),
        ledger,
        ...(options.isExecSession ? { isExecSession: options.isExecSession } : {}),
      });
      sessions.add(session);
      return session;
    },
    async shutdown(graceMs = 0) {
      accepting = false;
      await Promise.all([...sessions].map((s) => s.shutdown(graceMs)));
    },
  };
}
