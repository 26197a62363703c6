import type { Identity } from './identity.js';
import type { LiveCall } from './live-call.js';
import type { CallContext, StreamSource } from './operation.js';
import type { ResumableOutput } from './resumable-output.js';

/**
 * Where a stream's resumption (spec/PROTOCOL.md §4.9) is decided upstream, by another
 * server this one relays (a fleet gateway's calls resume at their agents, docs/fleet.md):
 * the one seam through which another layer takes part in it. A subscription that
 * declares a seam (`resumeSeam`) is resumable with the token its handler states through
 * `ctx.resumption`; a resume whose token this server did not issue is offered to the
 * seam, which may take it over (`adopt`).
 */
export interface ResumeSeam {
  /** What `token` names for a caller of `identity`; undefined: nothing (the caller hears NOT_FOUND). */
  adopt(token: string, identity: Identity | null): SeamStream | undefined;
}

/** A resumable call this server never held, taken up by its token through a seam. */
export interface SeamStream {
  /** The operation that runs it: one that declares the same seam. */
  readonly operation: string;
  /** How long it waits for its caller when its connection is lost. */
  readonly graceMs: number;
  /** The stream from upstream, from the item after `seq`; it calls `ctx.resumption.resumed` once upstream has it. */
  source(seq: number, ctx: CallContext): StreamSource<unknown>;
}

/** A call's resumption as its handler sees it, when a seam decides it (`ctx.resumption`). */
export interface SeamResumption {
  /**
   * The upstream stream is admitted: resumable as `token` (null: it is not). Nothing reaches
   * the caller before this. Returns whether the caller acknowledges the call's output: then
   * the upstream's may be acknowledged only as far as `onAcknowledged` says.
   */
  offer(token: string | null): boolean;
  /** Hears each acknowledgement of the caller's: the last item it has received. */
  onAcknowledged(listener: (seq: number) => void): void;
  /**
   * Upstream has the caller's input up to `seq`: the caller is told it was received no
   * further, so that what this server dies holding is sent again to the next (RSM-7).
   */
  upstreamHasInput(seq: number): void;
  /** A call taken up by token (`adopt`): upstream took it up too, and has input up to `inputSeq`. */
  resumed(inputSeq: number): void;
  /** Hears once that the call is forgotten here (its caller has it all, gave it up, or its grace passed): upstream may forget it too. */
  onForgotten(listener: () => void): void;
}

/** Listeners a handler may set before its call is resumable, passed on once it is. */
class Listeners {
  private acknowledged: ((seq: number) => void) | undefined;
  private forgotten: (() => void) | undefined;
  private upstreamInput = 0;
  private output: ResumableOutput | undefined;

  onAcknowledged(listener: (seq: number) => void): void {
    this.acknowledged = listener;
    this.output?.onAcknowledged(listener);
  }

  onForgotten(listener: () => void): void {
    this.forgotten = listener;
    this.output?.onForgotten(listener);
  }

  upstreamHasInput(seq: number): void {
    this.upstreamInput = Math.max(this.upstreamInput, seq);
    this.output?.upstreamHasInput(seq);
  }

  attach(output: ResumableOutput): void {
    this.output = output;
    output.upstreamHasInput(this.upstreamInput);
    if (this.acknowledged) output.onAcknowledged(this.acknowledged);
    if (this.forgotten) output.onForgotten(this.forgotten);
  }
}

/**
 * A new call whose token its handler states once upstream admits it: until then its caller
 * hears nothing (RSM-1), then that it is admitted (CR-1), with the token first when `keep`
 * makes it resumable. `acknowledges`: whether its caller acknowledges output.
 */
export function offeredResumption(call: LiveCall, window: number, keep: ((token: string) => ResumableOutput) | undefined, acknowledges: boolean): SeamResumption {
  const listeners = new Listeners();
  let offered = false;
  return {
    offer: (token) => {
      if (offered || call.ended) return false;
      offered = true;
      const resumable = token !== null && keep !== undefined;
      if (resumable) listeners.attach(keep(token));
      call.announce(window);
      return resumable && acknowledges;
    },
    onAcknowledged: (listener) => listeners.onAcknowledged(listener),
    onForgotten: (listener) => listeners.onForgotten(listener),
    upstreamHasInput: (seq) => listeners.upstreamHasInput(seq),
    resumed: () => undefined,
  };
}

/**
 * A call taken up through a seam: an ordinary one, whose refusal its caller hears as it is
 * (NOT_FOUND for every mismatch, RSM-4), until upstream has it; then resumable here with
 * the same token (`keep`), its output numbered on from `seq`, its caller told `call.resumed`.
 */
export function adoptedResumption(call: LiveCall, seq: number, keep: () => ResumableOutput): SeamResumption {
  const listeners = new Listeners();
  let taken = false;
  return {
    offer: () => false,
    onAcknowledged: (listener) => listeners.onAcknowledged(listener),
    onForgotten: (listener) => listeners.onForgotten(listener),
    upstreamHasInput: (inputSeq) => listeners.upstreamHasInput(inputSeq),
    resumed: (inputSeq) => {
      if (taken || call.ended) return;
      taken = true;
      const output = keep();
      output.log.continueAfter(seq);
      listeners.upstreamHasInput(inputSeq);
      listeners.attach(output);
      output.resumed(inputSeq);
    },
  };
}
