import { RpcError } from '../protocol/index.js';
import type { AdmissionRules } from './admission.js';
import type { ObserveCalls, ObserveRefusals, ObserveResumes } from './call-observer.js';
import type { IdentityCheck } from './access.js';
import { CallTable } from './call-table.js';
import { silentLogger, type Identity, type Logger } from './identity.js';
import { IdentityLedger } from './identity-ledger.js';
import { IdentityOutbound } from './identity-outbound.js';
import { resolveLimits, type DispatcherLimits } from './limits.js';
import { OutboundGauge } from './outbound-gauge.js';
import { ResumeRegistry } from './resume-registry.js';
import type { ResumeSeam } from './resume-seam.js';
import type { Registry } from './registry.js';
import { FrameConnection } from './frame-connection.js';
import type { FrameTransport } from './transport.js';

export interface DispatcherOptions {
  readonly registry: Registry;
  /** Resolves a bearer token (upgrade header or per-call `auth_token`); unknown tokens → undefined. */
  readonly authenticate?: (token: string) => Identity | undefined;
  /** Identity of callers without a token; default anonymous (`null`). */
  readonly anonymousIdentity?: Identity | null;
  readonly limits?: Partial<DispatcherLimits>;
  readonly logger?: Logger;
  /** Validate every output against the operation's output schema (RES-4). Default true. */
  readonly validateOutput?: boolean;
  /** Watches every admitted call on every transport (audit, recording). */
  readonly observe?: ObserveCalls;
  /** Told of every call refused at admission, on every transport (audit). */
  readonly observeRefusals?: ObserveRefusals;
  /** Told of every resume of a kept call, taken or refused (audit). */
  readonly observeResumes?: ObserveResumes;
  /** Where resumable calls this server did not issue are taken up, by their token (a fleet gateway, docs/fleet.md). */
  readonly resumeSeam?: ResumeSeam;
  /**
   * Whether WebTransport callers may open shared call streams (spec §5.4, WTS-1).
   * Default true; false answers them as a callee that predates them does (WT-3).
   */
  readonly sharedStreams?: boolean;
}

/**
 * A call of this process that makes other calls on its caller's behalf (a fan-out's
 * target execs), over a connection of their own (docs/security.md "Fan-out", a hostile caller).
 */
export interface ParentCall {
  /** Observers and the audit log are told it. */
  readonly callId: string;
  /** Each check its calls make of their caller, their operation's access included, binds its resume too (RSM-9). */
  readonly requireOnResume?: (check: IdentityCheck) => void;
  /** Who holds it now: each of its calls is admitted as this identity (a resume's, once it was resumed). */
  readonly heldBy: () => Identity | null;
}

/** What a new connection's calls have in common beside the server's rules. */
export interface ConnectOptions {
  /** Its callers never acknowledge output (plain HTTP, §5.6). */
  readonly unacknowledgedOutput?: boolean;
  /** Its calls are made for this call of the same process. */
  readonly parent?: ParentCall;
}

/**
 * The server's call engine, one for every transport: its operations, tokens, limits
 * and per-identity caps. Each connection gets a CallTable (`connect`), the one way
 * its calls start; a frame transport wraps it in a FrameConnection (`open`), which
 * translates frames. It holds every open connection and shuts them down together.
 */
export interface Dispatcher {
  readonly registry: Registry;
  readonly limits: DispatcherLimits;
  readonly logger: Logger | undefined;
  readonly authenticate: ((token: string) => Identity | undefined) | undefined;
  readonly anonymousIdentity: Identity | null;
  /** The open connections' calls; a table leaves this set when it closes. */
  readonly connections: ReadonlySet<CallTable>;
  /** Resumable calls, over every connection and none (§4.9). */
  readonly resumable: ResumeRegistry;
  /**
   * A transport refused a token before any call started (HTTP 401): told to the same
   * observer as a call's refusal (`observeRefusals`), so every refused authentication,
   * on every transport, is one audit line. `operationId`: what the request named, if anything.
   */
  refusedToken(refusal: { readonly transport: 'websocket' | 'http'; readonly operationId: string; readonly requestBytes: number }): void;
  /** False once shutdown has begun: transports refuse new connections. */
  readonly accepting: boolean;
  /**
   * A new connection's calls. `congested`: how the transport says its one channel is
   * over its bound (BP-4), none for a transport whose calls have their own flow.
   * `unacknowledgedOutput`: its callers never acknowledge output (plain HTTP, §5.6).
   */
  connect(congested?: () => boolean, options?: ConnectOptions): CallTable;
  /** A FrameConnection over a new connection; `identity` defaults to the anonymous identity. */
  open(transport: FrameTransport, identity?: Identity | null, options?: ConnectOptions): FrameConnection;
  /** Refuses new calls, lets live ones end within `graceMs`, then ends the rest with UNAVAILABLE; called again, ends them now. */
  shutdown(graceMs?: number): Promise<void>;
}

export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const connections = new Set<CallTable>();
  const limits = resolveLimits(options.limits);
  const logger = options.logger ?? silentLogger;
  const rules: AdmissionRules = {
    registry: options.registry,
    limits,
    authenticate: options.authenticate,
    ledger: new IdentityLedger(limits),
    outbound: new IdentityOutbound(limits.maxOutboundBytesPerIdentity),
  };
  const resumable = new ResumeRegistry(limits, logger, options.resumeSeam, options.observeResumes);
  let accepting = true;
  const connect = (congested?: () => boolean, connectOptions: ConnectOptions = {}): CallTable => {
    if (!accepting) throw new RpcError('UNAVAILABLE', 'the server is shutting down');
    const table: CallTable = new CallTable({
      rules,
      logger,
      validateOutput: options.validateOutput ?? true,
      accepting: () => accepting,
      resume: resumable,
      ...(options.observe ? { observe: options.observe } : {}),
      ...(options.observeRefusals ? { observeRefusals: options.observeRefusals } : {}),
      ...(congested ? { congested } : {}),
      ...(connectOptions.unacknowledgedOutput ? { unacknowledgedOutput: true } : {}),
      ...(connectOptions.parent === undefined ? {} : { parent: connectOptions.parent }),
      onClose: () => connections.delete(table),
    });
    connections.add(table);
    return table;
  };
  return {
    registry: options.registry,
    limits,
    logger: options.logger,
    authenticate: options.authenticate,
    anonymousIdentity: options.anonymousIdentity ?? null,
    connections,
    resumable,
    refusedToken({ transport, operationId, requestBytes }) {
      options.observeRefusals?.({ id: '', operationId, identity: null, requestBytes, error: RpcError.of('FORBIDDEN', 'invalid token'), transport });
    },
    get accepting() {
      return accepting;
    },
    connect,
    open(transport, identity = options.anonymousIdentity ?? null, connectOptions = {}) {
      if (transport.congested || options.sharedStreams === false) return new FrameConnection({ transport, calls: connect(transport.congested, connectOptions), identity, limits, logger });
      // A stream-per-call transport: its shared streams (WTS-3) are its one bounded channel.
      const sharedOutbound = new OutboundGauge(limits.maxOutboundBytesPerConnection, () => connection.drained());
      const calls = connect(() => sharedOutbound.congested, connectOptions);
      const connection: FrameConnection = new FrameConnection({ transport, calls, identity, limits, logger, sharedOutbound });
      return connection;
    },
    async shutdown(graceMs = 0) {
      accepting = false;
      await Promise.all([...connections].map((c) => c.shutdown(graceMs)));
      resumable.close();
    },
  };
}
