import { Client, ResumingConnection } from '../client/index.js';
import type { Identity } from '../dispatcher/index.js';
import type { RpcError } from '../protocol/index.js';
import type { GatewayLink } from './gateway-link.js';

/** How long an agent keeps a gateway's stream after the link to it is lost (the agent caps it, §4.9). */
export const LINK_GRACE_MS = 60_000;
/** A client with no call for this long is closed: a caller seen once holds nothing at the agents. */
export const IDLE_CLIENT_MS = 60_000;

interface Held {
  readonly host: string;
  readonly client: Client;
  readonly connection: ResumingConnection;
  calls: number;
  idleSince: number;
}

/** A client for one call; `release` when the call is over. */
export interface Lease {
  readonly client: Client;
  release(): void;
}

/**
 * The gateway's SDK clients to its agents, one per host and caller identity: the
 * agent admits, owns and resumes each call as the caller, so calls of different
 * callers never share a connection. A lost link is dialled again and its streams
 * resumed; a host that is gone fails them at once.
 */
export class FleetClients {
  private readonly held = new Map<string, Held>();
  private readonly sweeper: ReturnType<typeof setInterval>;

  constructor(
    private readonly link: GatewayLink,
    private readonly idleMs = IDLE_CLIENT_MS,
  ) {
    this.sweeper = setInterval(() => this.closeIdle(), Math.min(10_000, idleMs));
    this.sweeper.unref();
  }

  get size(): number {
    return this.held.size;
  }

  /** The client for `host` and `identity`, held open until the lease is released. */
  lease(host: string, identity: Identity | null): Lease {
    const held = this.heldFor(host, identity);
    held.calls++;
    let released = false;
    return {
      client: held.client,
      release: () => {
        if (released) return;
        released = true;
        if (--held.calls === 0) held.idleSince = Date.now();
      },
    };
  }

  /** `host` is gone (silent, or restarted): its calls fail with `error` now, not after their grace. */
  gone(host: string, error: RpcError): void {
    for (const [key, held] of this.held) {
      if (held.host !== host) continue;
      this.held.delete(key);
      void held.connection.close(error);
    }
    this.link.failHost(host, error);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.all(all.map((h) => h.client.close()));
  }

  private heldFor(host: string, identity: Identity | null): Held {
    const key = `${host}\n${identity === null ? '' : `${identity.subject}\n${identity.scopes.join(' ')}`}`;
    const existing = this.held.get(key);
    if (existing) return existing;
    const connection = new ResumingConnection(this.link.dial(host, identity), {
      dial: () => Promise.resolve(this.link.dial(host, identity)),
      initialDelayMs: 50,
      maxDelayMs: 500,
    });
    const client = new Client(connection, undefined, { graceMs: LINK_GRACE_MS });
    connection.onEvent = (event) => client.emit(event);
    const held: Held = { host, client, connection, calls: 0, idleSince: Date.now() };
    this.held.set(key, held);
    void connection.closed.then(() => {
      if (this.held.get(key) === held) this.held.delete(key);
    });
    return held;
  }

  private closeIdle(now = Date.now()): void {
    for (const [key, held] of this.held) {
      if (held.calls > 0 || now - held.idleSince < this.idleMs) continue;
      this.held.delete(key);
      void held.client.close();
    }
  }
}

/** The stream as it is, and `release` once it has ended, however it ends. */
export function releasing<T>(stream: AsyncIterable<T>, release: () => void): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const inner = stream[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const step = await inner.next();
            if (step.done) release();
            return step;
          } catch (error) {
            release();
            throw error;
          }
        },
        async return() {
          release();
          return (await inner.return?.()) ?? { value: undefined, done: true };
        },
      };
    },
  };
}
