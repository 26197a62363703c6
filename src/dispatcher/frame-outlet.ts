import { envelopes, outputFrameEncoder, RpcError, type Codec } from '../protocol/index.js';
import type { CallEvent, CallOutlet } from './call-outlet.js';
import type { DispatcherLimits } from './limits.js';

/** Sends one encoded frame; `final`: the call's terminal frame, after which a per-call stream ends. */
export type Deliver = (frame: Uint8Array, final: boolean) => Promise<void>;

/**
 * A call's events as protocol frames (spec/PROTOCOL.md §4), for the frame transports.
 * The callee never sends what the peer must refuse: a frame over `maxFrameBytes`
 * (LIM-1) or nested deeper than `maxNestingDepth` (LIM-2) is not sent, and its
 * call ends instead.
 */
export function frameOutlet(codec: Codec, limits: Pick<DispatcherLimits, 'maxFrameBytes' | 'maxNestingDepth'>, id: string, deliver: Deliver): CallOutlet<Uint8Array> {
  // A stream's output frames share their envelope's bytes up to the output (outputFrameEncoder).
  let outputFrames: ((output: unknown) => Uint8Array) | undefined;
  return {
    encode(event: CallEvent): Uint8Array {
      let bytes: Uint8Array;
      try {
        if (event.type === 'output' && !event.final && event.seq === undefined) bytes = (outputFrames ??= outputFrameEncoder(codec, id))(event.output);
        else bytes = codec.encode(envelopeOf(id, event));
      } catch (error) {
        throw new RpcError('INTERNAL', `output cannot be encoded with ${codec.name}: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (bytes.byteLength > limits.maxFrameBytes) throw new RpcError('INTERNAL', `an output frame of ${bytes.byteLength} bytes exceeds maxFrameBytes ${limits.maxFrameBytes}`);
      try {
        codec.checkNesting(bytes, limits.maxNestingDepth);
      } catch {
        throw new RpcError('INTERNAL', `an output frame would nest more than maxNestingDepth ${limits.maxNestingDepth} maps and arrays`);
      }
      return bytes;
    },
    send: deliver,
  };
}

function envelopeOf(id: string, event: CallEvent) {
  switch (event.type) {
    case 'credit':
      return event.seq === undefined ? envelopes.credit(id, event.bytes) : { type: 'call.credit', id, payload: { bytes: event.bytes, seq: event.seq } };
    case 'output':
      return event.seq === undefined ? envelopes.responded(id, event.output) : { type: 'call.responded', id, payload: { output: event.output, seq: event.seq } };
    case 'resumable':
      return envelopes.resumable(id, event.token, event.graceMs);
    case 'resumed':
      return envelopes.resumed(id, event.inputSeq, event.inputCredit);
    case 'completed':
      return envelopes.completed(id);
    case 'error':
      return envelopes.error(id, event.error.toPayload());
  }
}
