import type { NatsConnection } from '@nats-io/transport-node';
import { OutboundGauge } from '../dispatcher/index.js';

/**
 * BP-3 and BP-4 (spec §8) on an agent's NATS connection, the one channel all its virtual
 * connections share: a publish only hands bytes to the NATS client, which keeps what its
 * socket has not taken, so the bytes count as waiting until a flush's round trip shows the
 * server has them. Past the bound the connection is congested: the sessions' calls are not
 * pulled until half of it has gone (their `drained()`), as on a WebSocket whose socket is slow.
 */
export class NatsOutbound {
  private readonly gauge: OutboundGauge;
  private batch: { readonly bytes: number; readonly resolve: () => void }[] = [];
  private flushing = false;

  constructor(
    private readonly nc: NatsConnection,
    bound: number,
    onDrained: () => void,
  ) {
    this.gauge = new OutboundGauge(bound, onDrained);
  }

  get congested(): boolean {
    return this.gauge.congested;
  }

  /** `bytes` were just published: resolves once the NATS server has them (or the connection is gone). */
  published(bytes: number): Promise<void> {
    this.gauge.add(bytes);
    return new Promise((resolve) => {
      this.batch.push({ bytes, resolve });
      this.flush();
    });
  }

  /** One flush at a time covers everything published before it: a burst costs one round trip. */
  private flush(): void {
    if (this.flushing || this.batch.length === 0) return;
    this.flushing = true;
    const batch = this.batch;
    this.batch = [];
    const done = (): void => {
      this.flushing = false;
      for (const item of batch) {
        this.gauge.taken(item.bytes);
        item.resolve();
      }
      this.flush();
    };
    this.nc.flush().then(done, done);
  }
}
