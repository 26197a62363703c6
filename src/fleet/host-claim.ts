import { hostname } from 'node:os';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from '../dispatcher/index.js';
import { BEAT_MS } from './beat.js';
import { beatOf } from './subjects.js';

/** An agent as its heartbeats name it: what another agent of the same host id is told. */
export interface AgentSelf {
  readonly startedAt: number;
  readonly pid: number;
  readonly hostname: string;
}

export function agentSelf(): AgentSelf {
  return { startedAt: Date.now(), pid: process.pid, hostname: hostname() };
}

/** How long a starting agent listens for another agent's heartbeats before it serves: a live agent beats every second. */
export const CLAIM_MS = (BEAT_MS * 3) / 2;
/** A rival's beat larger than this (a table) is not parsed: its plain beats come every second anyway. */
const MAX_RIVAL_BEAT_BYTES = 4096;
/** How often a serving agent says again that another agent beats as its host. */
const RIVAL_LOG_MS = 60_000;

export function describeAgent(agent: Partial<AgentSelf>): string {
  const started = typeof agent.startedAt === 'number' ? new Date(agent.startedAt).toISOString() : 'at an unknown time';
  return `started ${started}, pid ${agent.pid ?? 'unknown'} on ${agent.hostname ?? 'an unknown machine'}`;
}

/** Whether `a` keeps the host id over `b`: the one started first; the same instant, by machine and pid, so both agree. */
function keepsIt(a: Partial<AgentSelf>, b: AgentSelf): boolean {
  const order = [(a.startedAt ?? 0) - b.startedAt, (a.hostname ?? '').localeCompare(b.hostname), (a.pid ?? 0) - b.pid];
  return (order.find((d) => d !== 0) ?? 0) < 0;
}

/**
 * One host id, one agent (docs/fleet.md "Running a fleet"): two agents of one id would both
 * take the gateways' messages for that host and answer them, and every call to it would
 * fail. An agent hears its own host's beat subject (its NATS connection does not echo its
 * own): one that hears another agent's beat within `CLAIM_MS` of starting does not serve,
 * and names that agent; one already serving that hears a rival that started first (two
 * started together, neither heard the other yet) gives way to it. A first agent really
 * gone sends no beat, so its restart waits `CLAIM_MS`, no longer.
 */
export class HostClaim {
  private subscription: Subscription | undefined;
  private rival: Partial<AgentSelf> | undefined;
  private displaced: ((message: string) => void) | undefined;
  private loggedAt = 0;

  private constructor(
    private readonly host: string,
    private readonly self: AgentSelf,
    private readonly logger: Logger,
  ) {}

  /** Listens for `waitMs`; throws, naming it, when another agent serves `host`. */
  static async take(nc: NatsConnection, host: string, self: AgentSelf, logger: Logger, waitMs = CLAIM_MS): Promise<HostClaim> {
    const claim = new HostClaim(host, self, logger);
    let refused: Error | undefined;
    claim.subscription = nc.subscribe(beatOf(host), {
      callback: (error, msg) => {
        if (error) refused = error;
        else claim.heard(msg.data);
      },
    });
    await nc.flush();
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    if (refused) {
      // A cluster set up before agents heard their own beats: serve, and say what it cannot check.
      logger.warn('cannot hear this host\'s own beat subject, so cannot tell whether another agent already serves this host id (give the host\'s NATS user subscribe permission on it, as scripts/nats-cluster.sh does)', { subject: beatOf(host), error: refused.message });
    }
    if (claim.rival) {
      claim.close();
      throw new Error(`host id ${host} is taken: another agent serves it (${describeAgent(claim.rival)}, as its heartbeat says); stop that one first, or give this one another --host-id`);
    }
    return claim;
  }

  /** Told once, when an agent that started first turns out to serve this host too: this one should leave. */
  onDisplaced(listener: (message: string) => void): void {
    this.displaced = listener;
    if (this.rival && keepsIt(this.rival, this.self)) this.giveWay(this.rival);
  }

  close(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }

  private heard(data: Uint8Array): void {
    if (data.byteLength > MAX_RIVAL_BEAT_BYTES) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(data).toString('utf8'));
    } catch {
      return; // not a beat: nothing said of who sent it
    }
    if (typeof parsed !== 'object' || parsed === null) return;
    const { startedAt, pid, hostname: machine } = parsed as Record<string, unknown>;
    const beat: Partial<AgentSelf> = {
      ...(typeof startedAt === 'number' ? { startedAt } : {}),
      ...(typeof pid === 'number' ? { pid } : {}),
      ...(typeof machine === 'string' ? { hostname: machine.slice(0, 255) } : {}),
    };
    if (beat.startedAt === this.self.startedAt && beat.pid === this.self.pid && beat.hostname === this.self.hostname) return;
    const first = this.rival === undefined;
    this.rival = beat;
    if (!this.displaced) return; // still claiming: take() refuses
    if (keepsIt(this.rival, this.self)) return this.giveWay(this.rival);
    if (first || Date.now() - this.loggedAt > RIVAL_LOG_MS) {
      this.loggedAt = Date.now();
      this.logger.error('another agent beats as this host; this one started first and keeps the host id, the other should stop', { host: this.host, other: describeAgent(this.rival) });
    }
  }

  private giveWay(rival: Partial<AgentSelf>): void {
    const displaced = this.displaced;
    this.displaced = () => undefined;
    this.close();
    displaced?.(`host id ${this.host} is taken: another agent that started first serves it too (${describeAgent(rival)}, as its heartbeat says); this one leaves the fleet`);
  }
}
