/**
 * What the resumable calls' rows (spec §4.9) are called, as their scenarios record them
 * and bench/RESULTS.md's sentences find them.
 */
import { fmt } from '../measure.js';

/** The relay cut's rows: from its end, and from the client's new connection, to the first item after it. */
export const SINCE_CUT_END = "a cut's end to the first resumed item";
export const SINCE_RECONNECT = 'the new connection to the first resumed item';
/** The peer of both: what a client that starts over without resume pays at least. */
export const FRESH_CALL = 'a fresh connect and first call';
export const FRESH_CALL_METRIC = `${FRESH_CALL}, through the same relay`;

export const DETACHED_CALLS = 1000;
/** The peer of the detached rows: the same calls, measured while their connection was up. */
export const ATTACHED = 'the same calls attached';
export type HeldPart = 'heap' | 'RSS' | 'replay kept';
export const perResumableCall = (part: HeldPart, state: 'attached' | 'detached', count = DETACHED_CALLS): string =>
  `${part} per resumable call, ${state === 'attached' ? `attached (${fmt(count)} live)` : `detached (${fmt(count)} waiting for their caller)`}`;
