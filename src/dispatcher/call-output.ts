import { RpcError } from '../protocol/index.js';
import type { CallEvent, Sized } from './call-outlet.js';
import type { RoomWaiter } from './replay-budget.js';

/** What a call's output tells the call. */
export interface OutputOwner extends RoomWaiter {
  /** The transport took bytes of the call's (BP-1): a source waiting for room may go on. */
  released(): void;
  /** Frames that waited for credit went, or were dropped: an ended call may now have nothing left to send. */
  flushed(): void;
  /** An event could not be encoded for this connection: the call fails with `error`. */
  failed(error: RpcError): void;
}

/**
 * A call's one output path, as the call sees it: flow-controlled (CreditedOutput), or
 * that wrapped to be numbered and replayable as well (ResumableOutput, §4.9). The call
 * decides what to say and when its life ends; its output decides when each frame goes.
 */
export interface CallOutput {
  /** The caller asked for output credit (§4.8). */
  readonly takesCredit: boolean;
  /** The call's own buffer is full (BP-1). */
  readonly full: boolean;
  /** A source that produces now would overflow what keeps its output (BP-2; a replay too, §4.9). */
  readonly overflowing: boolean;
  /** Once the call has ended: nothing is left to send. */
  readonly drained: boolean;
  /** The caller's input credit as the callee counts it, once the call has an input stream (§4.7). */
  inputCredit: (() => number) | undefined;
  /** An output's frame, or why it cannot be encoded (the call then fails). */
  encode(output: unknown, final: boolean): Sized | RpcError;
  /** One stream item, as `encode` gave it. */
  item(output: unknown, frame: Sized): void;
  /** A unary call's answer, as `encode` gave it: terminal (RES-1). */
  answer(frame: Sized): void;
  /** The call's terminal event: it leaves after everything before it (CR-5). */
  finish(event: CallEvent): void;
  /** An event about the call's flow, not its output: sent now, never held. */
  control(event: CallEvent): void;
  /** A grant of input credit to the caller (IN-1, CR-3). */
  grant(bytes: number): void;
  /** CR-4: the caller grants more output (`seq`: what it has received, §4.9). False: it asked for no credit. */
  credit(bytes: number, seq?: number): boolean;
  /** Whether one input numbered `seq` is new (take), already had (drop), or out of order (§4.9). */
  input(seq: number | undefined): 'take' | 'drop' | RpcError;
  /** The call waits for room: it hears when what holds it back other than its connection may have cleared. */
  listenForRoom(): void;
  /** The call has ended: it waits for nothing any more. */
  ended(): void;
  /** ABT-2: the caller wants nothing more of the call: what waits is dropped, anything kept let go. */
  discard(): void;
}

/** An output that cannot be encoded; the call ends with this error. */
export function cannotEncode(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  return new RpcError('INTERNAL', `output cannot be encoded: ${error instanceof Error ? error.message : String(error)}`);
}
