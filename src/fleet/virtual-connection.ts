import { CallRoutes, type CallChannel, type CallSink, type ClientConnection } from '../client/index.js';
import type { Identity } from '../dispatcher/index.js';
import { envelopes, msgpackCodec, RpcError, type Envelope } from '../protocol/index.js';
import { LinkReceiver, LinkSender, type LinkMessage } from './link-message.js';

export interface VirtualConnectionOptions {
  readonly id: string;
  readonly host: string;
  readonly publish: (data: Uint8Array) => void;
  readonly maxPayload: number;
  readonly maxFrameBytes: number;
  /** The caller the gateway admitted: the agent admits, owns and resumes its calls as this identity. */
  readonly identity: Identity | null;
  readonly onClosed: () => void;
}

/**
 * A callwire connection from a gateway to one agent, carried on NATS (docs/fleet.md):
 * to the SDK it is one more transport, so a gateway's call to an agent is an SDK call,
 * with its credit, input and resume. A lost message ends it as a dropped socket
 * would: the SDK's reconnecting connection opens another and resumes its calls.
 */
export class VirtualConnection implements ClientConnection {
  readonly codec = msgpackCodec;
  readonly carrier = 'nats' as const;
  readonly host: string;
  private readonly calls = new CallRoutes((envelope) => this.send(envelope));
  private readonly sender: LinkSender;
  private readonly receiver: LinkReceiver;
  private open = true;
  private closedResolve: () => void = () => undefined;
  readonly closed = new Promise<void>((resolve) => (this.closedResolve = resolve));

  constructor(private readonly options: VirtualConnectionOptions) {
    this.host = options.host;
    this.sender = new LinkSender(options.publish, options.id, options.maxPayload);
    this.receiver = new LinkReceiver(options.maxFrameBytes);
    this.sender.send('open', Buffer.from(JSON.stringify({ identity: options.identity ? { subject: options.identity.subject, scopes: [...options.identity.scopes] } : null })));
  }

  receive(message: LinkMessage): void {
    if (!this.open) return;
    if (message.kind === 'lost' && message.seq === 0) return this.fail(new RpcError('UNAVAILABLE', `host ${this.host} does not know this connection (it dropped it when its NATS connection broke, or its agent restarted)`), false);
    const received = this.receiver.accept(message);
    if (received === 'pending') return;
    if (received === 'gap') return this.fail(new RpcError('UNAVAILABLE', `a message from host ${this.host} was lost`), true);
    if (received.kind === 'frame') this.calls.deliver(this.codec, received.body);
    else if (received.kind === 'close') this.fail(new RpcError('UNAVAILABLE', `host ${this.host} closed the connection`), false);
    else if (received.kind === 'lost') this.fail(new RpcError('UNAVAILABLE', `host ${this.host} lost the connection`), false);
  }

  ping(): void {
    if (this.open) this.sender.send('ping');
  }

  startCall(request: Envelope, sink: CallSink): CallChannel {
    if (!this.open) return CallRoutes.refused(sink, new RpcError('UNAVAILABLE', `the connection to host ${this.host} is closed`));
    return this.calls.start(request, sink);
  }

  forget(id: string): void {
    if (this.open) this.send(envelopes.aborted(id));
  }

  /** Ends the connection: its calls hear `error`; `tellAgent` when the agent may not know yet. */
  fail(error: RpcError, tellAgent: boolean): void {
    if (!this.open) return;
    this.open = false;
    if (tellAgent) this.sender.send('lost');
    this.calls.loseAll(error);
    this.options.onClosed();
    this.closedResolve();
  }

  close(): Promise<void> {
    if (this.open) this.sender.send('close');
    this.fail(new RpcError('UNAVAILABLE', 'the connection was closed'), false);
    return this.closed;
  }

  private send(envelope: Envelope): number {
    const bytes = this.codec.encode(envelope);
    if (this.open) this.sender.send('frame', bytes);
    return bytes.byteLength;
  }
}
