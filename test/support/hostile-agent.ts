import { connect, type NatsConnection } from '@nats-io/transport-node';
import { decodeEnvelope, msgpackCodec } from '../../src/protocol/index.js';
import { decodeLink } from '../../src/fleet/link-message.js';
import { beatOf, toHost } from '../../src/fleet/subjects.js';
import type { NatsCluster } from './nats-cluster.js';

/** What reached the hostile agent from a gateway: a link message, and the call it carried, if any. */
export interface Delivered {
  readonly kind: string;
  readonly vc: string;
  /** An `open`'s identity, as the gateway named it. */
  readonly identity?: unknown;
  /** A `call.requested` frame's operation and input. */
  readonly operation?: string;
  readonly input?: unknown;
}

/**
 * A fleet host gone hostile (issue 31), with its own NATS credentials and nothing else:
 * it speaks the fleet's messages directly (docs/fleet.md "Subjects"), announcing the
 * container names it chooses in its heartbeats, and never answers a call. Every
 * message the gateways send it is kept in `delivered`, decoded.
 */
export class HostileAgent {
  readonly delivered: Delivered[] = [];
  private readonly startedAt = Date.now();
  private version = 0;
  private names: string[] = [];
  private idPrefix = 'b0b0';
  private timer: ReturnType<typeof setInterval> | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    readonly host: string,
  ) {}

  static async start(cluster: NatsCluster, host: string): Promise<HostileAgent> {
    const user = cluster.users[host];
    if (!user) throw new Error(`the cluster has no NATS user for host ${host}`);
    const nc = await connect({ servers: cluster.urls, user: user.user, pass: user.pass, name: `hostile-${host}` });
    const agent = new HostileAgent(nc, host);
    nc.subscribe(toHost(host), { callback: (_error, msg) => agent.record(msg.data) });
    await nc.flush();
    agent.timer = setInterval(() => agent.beat(), 500);
    agent.beat();
    return agent;
  }

  /** From now on, its table holds one container with these names (a's, say), its id starting with `idPrefix` (a's name, say). */
  announce(names: string[], idPrefix = 'b0b0'): void {
    this.names = names;
    this.idPrefix = idPrefix;
    this.version++;
    this.beat();
  }

  /** What reached it for `name`: calls whose input names it, bare or as HOST/NAME. */
  deliveredFor(name: string): Delivered[] {
    return this.delivered.filter((d) => {
      const ref = (d.input as { containerId?: unknown } | undefined)?.containerId;
      return typeof ref === 'string' && (ref === name || ref.endsWith(`/${name}`));
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.nc.close().catch(() => undefined);
  }

  private beat(): void {
    const containers = this.names.length > 0 ? [{ id: `${this.idPrefix}${this.version.toString(16).padStart(60, '0')}`, names: this.names }] : [];
    this.nc.publish(beatOf(this.host), JSON.stringify({ startedAt: this.startedAt, version: this.version, engine: 'up', containers }));
  }

  private record(data: Uint8Array): void {
    const message = decodeLink(data);
    if (!message) return void this.delivered.push({ kind: 'undecodable', vc: '' });
    if (message.kind === 'open') {
      const identity = (JSON.parse(Buffer.from(message.body).toString('utf8')) as { identity?: unknown }).identity;
      return void this.delivered.push({ kind: 'open', vc: message.vc, identity });
    }
    if (message.kind !== 'frame') return void this.delivered.push({ kind: message.kind, vc: message.vc });
    const parsed = decodeEnvelope(msgpackCodec, message.body);
    const envelope = parsed.kind === 'event' ? (parsed.envelope as { type?: string; payload?: { operationId?: string; input?: unknown } }) : undefined;
    this.delivered.push({
      kind: envelope?.type ?? 'frame',
      vc: message.vc,
      ...(envelope?.payload?.operationId === undefined ? {} : { operation: envelope.payload.operationId, input: envelope.payload.input }),
    });
  }
}
