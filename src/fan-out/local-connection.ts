import { CallRoutes, type CallChannel, type CallSink, type ClientConnection } from '../client/index.js';
import type { Dispatcher, Identity, FrameConnection } from '../dispatcher/index.js';
import { nextTurn } from '../flow/index.js';
import { envelopes, msgpackCodec, RpcError, type Envelope } from '../protocol/index.js';

/**
 * A connection from this process to its own dispatcher, as one caller: to the SDK it
 * is one more transport, so a call an operation makes on its caller's behalf is a
 * FrameConnection of the dispatcher's like any socket's, admitted as `identity` (its
 * scopes, a container's owner, its per-identity caps) and audited on its own line,
 * which names `parentCallId`, the call it was opened for.
 * Frames are encoded and decoded as on a socket, and each hop waits a turn, so the
 * SDK's credit bounds what the FrameConnection holds exactly as over the network.
 */
export class LocalConnection implements ClientConnection {
  readonly codec = msgpackCodec;
  readonly carrier = 'memory' as const;
  private readonly calls = new CallRoutes((envelope) => this.send(envelope));
  private readonly server: FrameConnection;
  private open = true;
  private closedResolve: () => void = () => undefined;
  readonly closed = new Promise<void>((resolve) => (this.closedResolve = resolve));

  constructor(dispatcher: Dispatcher, identity: Identity | null, parentCallId: string) {
    this.server = dispatcher.open(
      {
        codec: this.codec,
        // Its frames are taken as they are handed over: never congested, credit bounds each call.
        congested: () => false,
        send: (frame) => this.deliver(frame),
        close: (code, reason) => this.end(new RpcError('UNAVAILABLE', `the server closed the in-process connection (${code}: ${reason})`)),
      },
      identity,
      { parentCallId },
    );
  }

  startCall(request: Envelope, sink: CallSink): CallChannel {
    if (!this.open) return CallRoutes.refused(sink, new RpcError('UNAVAILABLE', 'the in-process connection is closed'));
    return this.calls.start(request, sink);
  }

  forget(id: string): void {
    if (this.open) this.send(envelopes.aborted(id));
  }

  /** Ends the connection: its calls still live are cancelled, as a closed socket's are. */
  close(): Promise<void> {
    if (this.open) {
      this.server.close();
      this.end(new RpcError('UNAVAILABLE', 'the in-process connection is closed'));
    }
    return this.closed;
  }

  private send(envelope: Envelope): number {
    const bytes = this.codec.encode(envelope);
    nextTurn(() => {
      if (this.open) this.server.receive(bytes);
    });
    return bytes.byteLength;
  }

  private deliver(frame: Uint8Array): Promise<void> {
    if (!this.open) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve) => {
      nextTurn(() => {
        if (this.open) this.calls.deliver(this.codec, frame);
        resolve();
      });
    });
  }

  private end(error: RpcError): void {
    if (!this.open) return;
    this.open = false;
    this.calls.loseAll(error);
    this.closedResolve();
  }
}
