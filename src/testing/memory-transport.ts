import { createDispatcher, OutboundGauge, type Dispatcher, type Identity, type Logger, type Registry, type FrameConnection, type DispatcherLimits, type FrameTransport } from '../dispatcher/index.js';
import { decodedEvent, EventQueue, RawPeer } from '../conformance/index.js';
import { nextTurn } from '../flow/index.js';
import { codecs, type Codec } from '../protocol/index.js';

export interface MemoryConnectionOptions {
  readonly registry: Registry;
  readonly codec?: Codec;
  readonly identity?: Identity | null;
  readonly authenticate?: (token: string) => Identity | undefined;
  readonly limits?: Partial<DispatcherLimits>;
  readonly logger?: Logger;
  /** The server's dispatcher, for a connection beside others (its registry, tokens and limits then count, not these). */
  readonly dispatcher?: Dispatcher;
}

/**
 * A connection with no sockets: the server's FrameConnection on one side, the raw peer (the conformance
 * runner's, over memory) on the other, bytes encoded with a real codec in between. `pause()` makes the transport
 * accept nothing (sends stay pending) until `resume()`, to test backpressure.
 */
export class MemoryConnection implements FrameTransport {
  readonly server: FrameConnection;
  readonly client: RawPeer;
  private readonly events = new EventQueue();
  readonly codec: Codec;
  private paused = false;
  private held: (() => void)[] = [];
  private open = true;
  private readonly outbound: OutboundGauge;

  constructor(options: MemoryConnectionOptions) {
    this.codec = options.codec ?? codecs.msgpack;
    const dispatcher =
      options.dispatcher ??
      createDispatcher({
        registry: options.registry,
        ...(options.authenticate ? { authenticate: options.authenticate } : {}),
        ...(options.limits ? { limits: options.limits } : {}),
        ...(options.logger ? { logger: options.logger } : {}),
      });
    this.outbound = new OutboundGauge(dispatcher.limits.maxOutboundBytesPerConnection, () => this.server.drained());
    this.server = dispatcher.open(this, options.identity ?? null);
    // Each hop waits a turn of the event loop, as socket I/O would; order is kept.
    const write = (bytes: Uint8Array): void => {
      if (this.open) nextTurn(() => this.server.receive(bytes));
    };
    const codec = this.codec;
    this.client = new RawPeer({
      transport: 'memory',
      carrier: 'memory',
      resets: false,
      codec,
      events: this.events,
      sendValue: (value) => write(codec.encode(value)),
      sendBytes: write,
      sendText: () => {
        throw new Error('text messages exist only on WebSocket');
      },
      pause: (ms) => {
        this.pause();
        if (ms !== undefined) setTimeout(() => this.resume(), ms);
      },
      resume: () => this.resume(),
      finish: () => {
        throw new Error('finish applies to WebTransport streams');
      },
      reset: () => {
        throw new Error('reset applies to WebTransport streams');
      },
      close: async () => this.close(1000, 'closed by the peer'),
    });
  }

  // FrameTransport
  readonly congested = (): boolean => this.outbound.congested;

  send(frame: Uint8Array): Promise<void> {
    if (!this.open) return Promise.reject(new Error('connection closed'));
    this.outbound.add(frame.byteLength);
    const deliver = (): void => {
      this.outbound.taken(frame.byteLength);
      if (this.open) this.events.push(decodedEvent(this.codec, frame));
    };
    if (!this.paused) {
      return new Promise((resolve) => {
        nextTurn(() => {
          deliver();
          resolve();
        });
      });
    }
    return new Promise((resolve) => {
      this.held.push(() => {
        deliver();
        resolve();
      });
    });
  }

  close(code: number, reason: string): void {
    if (!this.open) return;
    this.open = false;
    // 1006: no close handshake, a connection the network lost (§4.9).
    if (code === 1006) this.server.lost();
    else this.server.close();
    this.events.push({ kind: 'close', code, reason });
  }

  /** Simulates the caller's side dropping the connection. */
  disconnect(): void {
    this.close(1006, 'disconnected');
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    for (const release of this.held.splice(0)) release();
  }

  /** Frames the transport is holding while paused. */
  get heldFrames(): number {
    return this.held.length;
  }
}
