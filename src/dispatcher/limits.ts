import { limits as defaults } from '../protocol/index.js';

/** The limits a dispatcher enforces (spec/PROTOCOL.md §9); every name carries its unit. */
export interface DispatcherLimits {
  /** Largest frame either side sends; an output that encodes larger ends its call (LIM-1). */
  readonly maxFrameBytes: number;
  readonly maxInputBytes: number;
  /** Maps and arrays a frame may nest; a deeper one is refused undecoded (LIM-2). */
  readonly maxNestingDepth: number;
  readonly maxCallsInFlight: number;
  readonly maxBufferedBytesPerCall: number;
  /** Bytes waiting for one connection's socket; above it the transport stops reading the peer (BP-3). */
  readonly maxOutboundBytesPerConnection: number;
  /** Output one identity's readers have not taken, all its connections together: at it an output ends its call; from half of it waiting for transports, its sources wait (§8). */
  readonly maxOutboundBytesPerIdentity: number;
  readonly maxDeadlineMs: number;
  /** Live calls of one identity over every connection of the dispatcher (LIM-3). */
  readonly maxCallsPerIdentity: number;
  /** Live calls of one identity to operations that run a command (those with a `commandEnd`, LIM-3). */
  readonly maxExecSessionsPerIdentity: number;
  /** Longest grace a resumable call is kept for after its connection is lost; 0: calls are never resumable (§4.9). */
  readonly maxResumeMs: number;
  /** Replay bytes kept for one resumable call, for one identity, for the whole server (§4.9). */
  readonly maxReplayBytesPerCall: number;
  readonly maxReplayBytesPerIdentity: number;
  readonly maxReplayBytes: number;
}

/** The protocol defaults, overridden by `given`. */
export function resolveLimits(given: Partial<DispatcherLimits> = {}): DispatcherLimits {
  return {
    maxFrameBytes: given.maxFrameBytes ?? defaults.maxFrameBytes,
    maxInputBytes: given.maxInputBytes ?? defaults.maxInputBytes,
    maxNestingDepth: given.maxNestingDepth ?? defaults.maxNestingDepth,
    maxCallsInFlight: given.maxCallsInFlight ?? defaults.maxCallsInFlight,
    maxBufferedBytesPerCall: given.maxBufferedBytesPerCall ?? defaults.maxBufferedBytesPerCall,
    maxOutboundBytesPerConnection: given.maxOutboundBytesPerConnection ?? defaults.maxOutboundBytesPerConnection,
    maxOutboundBytesPerIdentity: given.maxOutboundBytesPerIdentity ?? defaults.maxOutboundBytesPerIdentity,
    maxDeadlineMs: given.maxDeadlineMs ?? defaults.maxDeadlineMs,
    maxCallsPerIdentity: given.maxCallsPerIdentity ?? defaults.maxCallsPerIdentity,
    maxExecSessionsPerIdentity: given.maxExecSessionsPerIdentity ?? defaults.maxExecSessionsPerIdentity,
    maxResumeMs: given.maxResumeMs ?? defaults.maxResumeMs,
    maxReplayBytesPerCall: given.maxReplayBytesPerCall ?? defaults.maxReplayBytesPerCall,
    maxReplayBytesPerIdentity: given.maxReplayBytesPerIdentity ?? defaults.maxReplayBytesPerIdentity,
    maxReplayBytes: given.maxReplayBytes ?? defaults.maxReplayBytes,
  };
}
