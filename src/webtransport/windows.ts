import { limits } from '../protocol/index.js';

/**
 * WebTransport-over-HTTP/2 flow-control windows and stream counts (spec/PROTOCOL.md
 * §5.4). Both ends use the same values: with @fails-components/webtransport 1.6.8, a
 * peer whose settings have not arrived yet is assumed to use our own initial window.
 * The session window equals the library's 15 MiB limit, because its server otherwise
 * announces 16 KiB while assuming it granted 15 MiB, and stalls (defect 1). This is
 * tuning for that library, not protocol: it lives beside the library's typings.
 */
export const webTransportWindows = {
  initialSessionFlowControlWindow: 15 * 1024 * 1024,
  initialStreamFlowControlWindow: 1024 * 1024,
  // One stream per call: what a caller assumes until the callee's settings arrive (§5.4).
  initialBidirectionalStreams: limits.maxCallsInFlight,
} as const;

/**
 * The call streams a callee allows one session at once (spec §5.4, WT-5): twice its
 * `maxCallsInFlight`, so that a call over the limit reaches it and is refused with
 * `LIMIT_EXCEEDED` (REQ-1) instead of waiting unseen for a stream credit, yet a caller
 * cannot open streams without bound.
 */
export function callStreamsAllowed(maxCallsInFlight: number): number {
  return 2 * maxCallsInFlight;
}
