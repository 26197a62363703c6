import { randomBytes } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { ClientConnection } from '../client/index.js';
import type { Identity, Logger } from '../dispatcher/index.js';
import { RpcError } from '../protocol/index.js';
import { decodeLink } from './link-message.js';
import { guarded, publisher } from './nats-settings.js';
import { fromAnyHost, hostOfSubject, toHost } from './subjects.js';
import { VirtualConnection } from './virtual-connection.js';

/** How often a gateway tells each of its virtual connections it is still there. */
export const VC_PING_MS = 2000;

/**
 * The gateway's side of the link (docs/fleet.md): one subscription for everything
 * every agent sends it, routed to its virtual connections by id. The host a message
 * came from is its subject's, which the agent's NATS user cannot forge.
 */
export class GatewayLink {
  readonly id = randomBytes(6).toString('hex');
  private readonly vcs = new Map<string, VirtualConnection>();
  private counter = 0;
  private subscription: Subscription | undefined;
  private pinger: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly logger: Logger,
    private readonly maxFrameBytes: number,
  ) {}

  get openConnections(): number {
    return this.vcs.size;
  }

  start(): void {
    this.subscription = this.nc.subscribe(fromAnyHost(this.id), {
      callback: guarded(this.logger, 'the link from the agents', (msg) => {
        const host = hostOfSubject(msg.subject);
        const message = decodeLink(msg.data);
        if (!host || !message) return;
        const vc = this.vcs.get(message.vc);
        // A message from a host other than the one the connection was opened to is forged or misrouted.
        if (!vc || vc.host !== host) return;
        try {
          vc.receive(message);
        } catch (thrown) {
          vc.fail(new RpcError('INTERNAL', `a message from host ${host} could not be handled`), true);
          throw thrown;
        }
      }),
    });
    // Numbered like every message: what NATS lost shows as a gap at the agent by the next ping.
    this.pinger = setInterval(() => {
      for (const vc of this.vcs.values()) vc.ping();
    }, VC_PING_MS);
    this.pinger.unref();
  }

  /** A new virtual connection to `host`'s agent on behalf of `identity`. */
  dial(host: string, identity: Identity | null): ClientConnection {
    if (this.nc.isClosed()) throw new RpcError('UNAVAILABLE', 'the gateway has no connection to NATS');
    const vcId = `${this.id}.${(++this.counter).toString(36)}`;
    const subject = toHost(host);
    const vc = new VirtualConnection({
      id: vcId,
      host,
      publish: publisher(this.nc, subject, this.logger),
      maxPayload: this.nc.info?.max_payload ?? 1024 * 1024,
      maxFrameBytes: this.maxFrameBytes,
      identity,
      onClosed: () => this.vcs.delete(vcId),
    });
    this.vcs.set(vcId, vc);
    return vc;
  }

  /**
   * The gateway's NATS connection broke: whatever the agents sent it meanwhile is lost,
   * so every virtual connection is, now rather than at its next gap; their resumable
   * calls go on over new ones, and calls started from now on start there.
   */
  loseAll(): void {
    for (const vc of [...this.vcs.values()]) vc.fail(new RpcError('UNAVAILABLE', `the gateway lost its NATS connection to host ${vc.host}`), true);
  }

  /** Every virtual connection to `host` fails with `error` (its agent is gone). */
  failHost(host: string, error: RpcError): void {
    for (const vc of [...this.vcs.values()]) if (vc.host === host) vc.fail(error, false);
  }

  stop(): void {
    if (this.pinger !== undefined) clearInterval(this.pinger);
    for (const vc of [...this.vcs.values()]) void vc.close();
    this.subscription?.unsubscribe();
  }
}
