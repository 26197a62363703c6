import type { Observable } from 'rxjs';
import type { z } from 'zod';
import type { Contract } from '../contracts/index.js';
import { isProtocolCode } from '../protocol/index.js';
import type { IdentityCheck } from './access.js';
import type { Identity, Logger } from './identity.js';
import type { ResumeSeam, SeamResumption } from './resume-seam.js';

export type { OperationKind, DeclaredError, AccessControl } from '../contracts/index.js';

/**
 * What a handler is given of its call. Its signal and logger are made when first read, so
 * a copy made by a spread lacks them: derive one with `deriveContext`.
 */
export interface CallContext {
  readonly callId: string;
  readonly operation: string;
  readonly identity: Identity | null;
  /** Fires on call.aborted, deadline, disconnect or server shutdown. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** Epoch milliseconds at which the call times out, when it has a deadline. */
  readonly deadlineAt: number | undefined;
  /**
   * The call's input stream (spec §4.7), for operations that declare `inputStream`:
   * validated items in order, ending at the caller's `call.end`. Pulling it is what
   * grants the caller more credit.
   */
  readonly input: AsyncIterable<unknown> | undefined;
  /** For an operation that declares a `resumeSeam`: how its call becomes resumable with the token upstream chose (§4.9). */
  readonly resumption?: SeamResumption | undefined;
  /** A fleet gateway's handler says which host it sent the call to: the call's observers (its audit line) hear it. */
  readonly routedTo?: (host: string) => void;
  /**
   * A check the handler made of `identity` (a container's owner, a fleet host's scope): a
   * resume of the call must pass it too, with the resuming identity (RSM-9). Absent where
   * no call can be resumed.
   */
  readonly requireOnResume?: (check: IdentityCheck) => void;
  /**
   * Who holds the call now: the identity that last resumed it (§4.9), else `identity`. A
   * handler that makes calls on its caller's behalf (a fan-out) makes them as this one.
   */
  readonly heldBy?: () => Identity | null;
}

export type StreamSource<T> = Observable<T> | AsyncIterable<T>;

/** An operation is a contract (its name, kind and schemas) and the handler that implements it. */
export interface UnaryOperation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> extends Contract<'query' | 'mutation', I, O> {
  readonly handler: (input: z.output<I>, ctx: CallContext) => z.input<O> | Promise<z.input<O>>;
}

export interface SubscriptionOperation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> extends Contract<'subscription', I, O> {
  readonly handler: (input: z.output<I>, ctx: CallContext) => StreamSource<z.input<O>>;
  /** Its stream is resumed upstream, through this seam: see `ResumeSeam`. */
  readonly resumeSeam?: ResumeSeam;
}

export type Operation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> =
  | UnaryOperation<I, O>
  | SubscriptionOperation<I, O>;

// Operation names are slash separated; the first segment is the namespace.
const NAME = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/;

/**
 * Declares an operation and checks its shape now, so a mistake fails at startup
 * with a clear message rather than on the first call.
 */
export function defineOperation<I extends z.ZodType, O extends z.ZodType>(def: UnaryOperation<I, O>): UnaryOperation<I, O>;
export function defineOperation<I extends z.ZodType, O extends z.ZodType>(def: SubscriptionOperation<I, O>): SubscriptionOperation<I, O>;
export function defineOperation(def: Operation): Operation {
  assertOperationShape(def);
  return def;
}

export function assertOperationShape(def: Operation): void {
  const where = `operation "${String(def.name)}"`;
  if (typeof def.name !== 'string' || !NAME.test(def.name)) {
    throw new TypeError(`${where}: name must be slash-separated segments of letters, digits, '_', '.' or '-'`);
  }
  const kind: string = def.kind;
  if (kind !== 'query' && kind !== 'mutation' && kind !== 'subscription') {
    throw new TypeError(`${where}: kind must be 'query', 'mutation' or 'subscription', not '${kind}'`);
  }
  if (typeof def.handler !== 'function') throw new TypeError(`${where}: handler must be a function`);
  const fnKind = def.handler.constructor.name;
  if (def.kind !== 'subscription' && fnKind === 'AsyncGeneratorFunction') {
    throw new TypeError(`${where}: a ${def.kind} handler returns one value; an async generator is a subscription handler`);
  }
  if (def.kind === 'subscription' && fnKind === 'AsyncFunction') {
    throw new TypeError(`${where}: a subscription handler returns an Observable or an async iterable, not a promise`);
  }
  for (const schema of ['input', 'output'] as const) {
    if (typeof (def[schema] as { safeParse?: unknown } | undefined)?.safeParse !== 'function') {
      throw new TypeError(`${where}: ${schema} must be a zod schema`);
    }
  }
  for (const code of Object.keys(def.errors ?? {})) {
    if (isProtocolCode(code)) throw new TypeError(`${where}: error code ${code} is a protocol code and cannot be declared`);
    if (!/^[A-Z][A-Z0-9_]*$/.test(code)) throw new TypeError(`${where}: error code ${code} must be UPPER_SNAKE_CASE`);
  }
}

export function isIdempotent(op: Operation): boolean {
  return op.idempotent ?? op.kind === 'query';
}

export function isUnary(op: Operation): op is UnaryOperation {
  return op.kind !== 'subscription';
}
