import { CallRoutes, type CallChannel, type CallSink, type ClientConnection } from '../client/index.js';
import type { CallContext, Dispatcher, FrameConnection } from '../dispatcher/index.js';
import { nextTurn } from '../flow/index.js';
import { envelopes, msgpackCodec, RpcError, type Envelope } from '../protocol/index.js';

/**
 * A connection from this process to its own dispatcher, for the calls one call (`parent`)
 * makes on its caller's behalf: to the SDK it is one more transport, so each such call is
 * a FrameConnection's of the dispatcher's like any socket's, admitted as the caller who
 * holds the parent now (its scopes, a container's owner, its per-identity caps; after a
 * resume, the identity that resumed it) and audited on its own line naming the parent.
 * Every check those calls make of their caller binds the parent's resume too (RSM-9,
 * docs/security.md "Fan-out"), so taking the parent up needs all they needed.
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

  constructor(dispatcher: Dispatcher, parent: CallContext) {
    this.server = dispatcher.open(
      {
        codec: this.codec,
        // Its frames are taken as they are handed over: never congested, credit bounds each call.
        congested: () => false,
        send: (frame) => this.deliver(frame),
        close: (code, reason) => this.end(new RpcError('UNAVAILABLE', `the server closed the in-process connection (${code}: ${reason})`)),
      },
      parent.identity,
      {
        parent: {
          callId: parent.callId,
          ...(parent.requireOnResume ? { requireOnResume: (check) => parent.requireOnResume?.(check) } : {}),
          heldBy: () => (parent.heldBy ? parent.heldBy() : parent.identity),
        },
      },
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
