import type { RpcError } from '../protocol/index.js';
import type { Identity } from './identity.js';
import type { Operation } from './operation.js';

/** How a call ended, as an observer sees it. */
export type CallOutcome =
  | { readonly kind: 'completed' }
  | { readonly kind: 'error'; readonly error: RpcError }
  /** Aborted by its caller, its connection closed, or its resume grace passed: no terminal event was sent. */
  | { readonly kind: 'cancelled' };

/** One admitted call, as an observer is told of it when it starts. */
export interface ObservedCall {
  readonly id: string;
  readonly operation: Operation;
  readonly identity: Identity | null;
  /** The validated input. */
  readonly input: unknown;
  /** The request's size as it arrived (its frame, its body). */
  readonly requestBytes: number;
  /** The call this one was made for, in this process (a fan-out's target exec): its id. */
  readonly parentCallId?: string;
  /**
   * Ends the call with this error, as the dispatcher ends one (its handler is cancelled),
   * in a turn of its own: for an observer without which the call may not go on
   * (`serve --record-strict`: a session whose recording stopped).
   */
  readonly end?: (error: RpcError) => void;
}

/** A call refused at admission (spec §4.1, REQ-2 … REQ-7): it never started. */
export interface RefusedCall {
  readonly id: string;
  /** The operation as the caller named it (maybe none the server has). */
  readonly operationId: string;
  /** The call's token's identity when it names one, else the connection's. */
  readonly identity: Identity | null;
  readonly requestBytes: number;
  /** The call this one was made for, in this process (a fan-out's target exec): its id. */
  readonly parentCallId?: string;
  readonly error: RpcError;
  /**
   * Set for a token refused before any call could start (a WebSocket upgrade's or an
   * HTTP request's `Authorization`, which has no call id): the transport that refused it.
   */
  readonly transport?: 'websocket' | 'http';
}

/**
 * Watches one call's traffic (for the audit log and session recordings). Its methods
 * run in the call's own turn and must not throw or block; what they keep is theirs.
 */
export interface CallObserver {
  /** One item of the caller's input stream, as validated, with its encoded size. */
  input?(item: unknown, bytes: number): void;
  /** One output the handler produced (a stream's item, or a unary call's answer), with its encoded size. */
  output?(output: unknown, bytes: number): void;
  /** A fleet gateway sent the call to this host (docs/fleet.md): before its first output. */
  routed?(host: string): void;
  /** The call has ended; called once. */
  ended?(outcome: CallOutcome): void;
}

/** A resume of a kept call (§4.9), taken or refused: who asked, for which call, from where in its output. */
export interface ResumeAttempt {
  /** The call id the resume named. */
  readonly id: string;
  /** The call's operation, when the token names a call of that id here. */
  readonly operation?: string;
  /** Who asked: the identity of the resume's token, or its connection's. */
  readonly identity: Identity | null;
  /** The output item the caller had, or `end` for a caller letting the call go (HTTP-11). */
  readonly after: number | 'end';
  /** Why it was refused; absent: the call was taken up. */
  readonly error?: RpcError;
}

/** Called for each resume, taken or refused; must not throw or block. */
export type ObserveResumes = (resume: ResumeAttempt) => void;

/** Called as each call is admitted; returns the call's observer, or nothing to leave it unwatched. */
export type ObserveCalls = (call: ObservedCall) => CallObserver | undefined;

/** Called for each call refused at admission; must not throw or block. */
export type ObserveRefusals = (call: RefusedCall) => void;
