import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { z } from 'zod';
import type { Dispatcher, Identity, Logger, FrameConnection } from '../dispatcher/index.js';
import { msgpackCodec } from '../protocol/index.js';
import { decodeLink, LinkReceiver, LinkSender, encodeLink, type LinkMessage } from './link-message.js';
import { guarded, publisher } from './nats-settings.js';
import { NatsOutbound } from './nats-outbound.js';
import { fromHost, toHost } from './subjects.js';

const openBody = z.strictObject({
  identity: z.strictObject({ subject: z.string().min(1), scopes: z.array(z.string()) }).nullable(),
});

/** How long a virtual connection may stay silent (its gateway pings it) before it counts as lost. */
export const VC_IDLE_MS = 10_000;
/** A bound on the virtual connections all gateways together may hold open at one agent. */
const MAX_VCS = 10_000;

interface AgentVc {
  readonly sender: LinkSender;
  readonly receiver: LinkReceiver;
  readonly server: FrameConnection;
  heardAt: number;
}

export interface AgentLinkOptions {
  readonly nc: NatsConnection;
  readonly host: string;
  readonly dispatcher: Dispatcher;
  readonly logger: Logger;
  readonly idleMs?: number;
}

/**
 * The agent's side of every gateway's virtual connections (docs/fleet.md): one NATS
 * subscription on its own `to` subject, a FrameConnection per virtual connection,
 * whose frames go back on `from.<gateway>`. The gateways are trusted to name the
 * caller's identity: only they may publish on an agent's subject (NATS permissions).
 */
export class AgentLink {
  private readonly vcs = new Map<string, AgentVc>();
  private subscription: Subscription | undefined;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  /** What the virtual connections published that NATS has not confirmed (BP-3, BP-4): one bound for the one connection. */
  private readonly outbound: NatsOutbound;

  constructor(private readonly options: AgentLinkOptions) {
    this.outbound = new NatsOutbound(options.nc, options.dispatcher.limits.maxOutboundBytesPerConnection, () => {
      for (const vc of this.vcs.values()) vc.server.drained();
    });
  }

  get openConnections(): number {
    return this.vcs.size;
  }

  /**
   * Resolves once the NATS server has the agent's subscription (a flush's round trip on the
   * same connection): a gateway's `open` that reaches the server before it is delivered to
   * nobody, and the virtual connection's next message then finds an agent that never heard
   * of it. A gateway on another connection may dial as soon as this resolves.
   */
  async start(): Promise<void> {
    const { nc, host } = this.options;
    this.subscription = nc.subscribe(toHost(host), {
      callback: guarded(this.options.logger, 'the link from the gateways', (msg) => {
        const message = decodeLink(msg.data);
        if (message) this.receive(message);
      }),
    });
    const idleMs = this.options.idleMs ?? VC_IDLE_MS;
    this.sweeper = setInterval(() => {
      const now = Date.now();
      for (const [id, vc] of this.vcs) {
        if (now - vc.heardAt > idleMs) this.drop(id, vc, 'its gateway fell silent');
        // Numbered like every message: a frame of ours that NATS lost shows as a gap at the next ping, not as a silence.
        else vc.sender.send('ping');
      }
    }, Math.min(2000, idleMs / 2));
    this.sweeper.unref();
    // A connection that breaks meanwhile subscribes again once it is back; a start that threw would only stop the agent.
    await nc.flush().catch(() => undefined);
  }

  /**
   * The agent's NATS connection broke: what gateways sent it meanwhile is lost, so
   * every virtual connection is, now rather than at its gateway's next ping; the
   * `lost` goes out once NATS is back, and the gateways resume their calls.
   */
  loseAll(): void {
    for (const [id, vc] of this.vcs) this.drop(id, vc, 'the NATS connection broke');
  }

  /** Stops taking messages; the dispatcher's shutdown ends the calls. */
  stop(): void {
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.subscription?.unsubscribe();
    for (const [id, vc] of this.vcs) {
      vc.sender.send('close');
      this.vcs.delete(id);
      vc.server.close();
    }
  }

  private receive(message: LinkMessage): void {
    const vc = this.vcs.get(message.vc);
    if (!vc) {
      if (message.kind === 'open' && message.seq === 1) this.open(message);
      else if (message.kind !== 'lost' && message.kind !== 'close') this.tellLost(message.vc);
      return;
    }
    vc.heardAt = Date.now();
    const received = vc.receiver.accept(message);
    if (received === 'pending') return;
    if (received === 'gap') return this.drop(message.vc, vc, 'a message was lost');
    if (received.kind === 'frame') vc.server.receive(received.body);
    else if (received.kind === 'close') {
      this.vcs.delete(message.vc);
      vc.server.close();
    } else if (received.kind === 'lost') {
      this.vcs.delete(message.vc);
      vc.server.lost();
    }
  }

  private open(message: LinkMessage): void {
    const gateway = message.vc.split('.')[0] ?? '';
    let identity: Identity | null;
    try {
      identity = openBody.parse(JSON.parse(Buffer.from(message.body).toString('utf8'))).identity;
    } catch {
      return this.tellLost(message.vc);
    }
    if (this.vcs.size >= MAX_VCS || !this.options.dispatcher.accepting || !/^[a-z0-9]+$/.test(gateway)) return this.tellLost(message.vc);
    const { nc, host, dispatcher } = this.options;
    const subject = fromHost(host, gateway);
    const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    const sender = new LinkSender(publisher(nc, subject, this.options.logger), message.vc, maxPayload);
    const id = message.vc;
    const server = dispatcher.open(
      {
        codec: msgpackCodec,
        send: (frame) => {
          if (!this.vcs.has(id)) return Promise.resolve();
          sender.send('frame', frame);
          return this.outbound.published(frame.byteLength);
        },
        congested: () => this.outbound.congested,
        close: () => {
          if (this.vcs.delete(id)) sender.send('close');
        },
      },
      identity,
    );
    const receiver = new LinkReceiver(dispatcher.limits.maxFrameBytes);
    receiver.accept(message);
    this.vcs.set(id, { sender, receiver, server, heardAt: Date.now() });
  }

  /** A gap, a silence: the calls on it go on for their grace if resumable (§4.9), the rest end. */
  private drop(id: string, vc: AgentVc, why: string): void {
    this.options.logger.info('link connection lost', { vc: id, why });
    this.vcs.delete(id);
    vc.sender.send('lost');
    vc.server.lost();
  }

  private tellLost(vc: string): void {
    const gateway = vc.split('.')[0] ?? '';
    if (!/^[a-z0-9]+$/.test(gateway)) return;
    publisher(this.options.nc, fromHost(this.options.host, gateway), this.options.logger)(encodeLink('lost', 0, vc));
  }
}
