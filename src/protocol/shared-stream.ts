/**
 * The frame that opens a shared call stream over WebTransport (spec/PROTOCOL.md §5.4,
 * WTS-1): the first frame of a stream that will carry many calls, and the callee's
 * acknowledgement on it. Its type is not one of the event types, so an older callee
 * refuses the stream (WT-1, WT-3) and an older caller never sees one.
 */
export const SHARED_STREAM_TYPE = 'stream.shared';

/** Protocol version of shared call streams this build speaks; a new one gets a new type name (VER-1). */
export const SHARED_STREAM_VERSION = 1;

export function sharedStreamFrame(id: string): { readonly type: string; readonly id: string; readonly payload: { readonly version: number } } {
  return { type: SHARED_STREAM_TYPE, id, payload: { version: SHARED_STREAM_VERSION } };
}
