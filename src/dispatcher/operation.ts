import type { Observable } from 'rxjs';
import type { z } from 'zod';
import { isProtocolCode } from '../protocol/index.js';
import type { Identity, Logger } from './identity.js';

/** spec/PROTOCOL.md §1: query and mutation are unary, subscription streams. */
export type OperationKind = 'query' | 'mutation' | 'subscription';

export interface DeclaredError {
  readonly description: string;
  /** Schema of `details`; a thrown error whose details fail it becomes INTERNAL. */
  readonly details?: z.ZodType;
  readonly httpStatus?: number;
}

/** spec/PROTOCOL.md §10. */
export interface AccessControl {
  /** All of these. */
  readonly requiredScopes?: readonly string[];
  /** At least one of these. */
  readonly requiredScopesAny?: readonly string[];
  readonly resourceType?: string;
  readonly resourceAction?: string;
  /** Where the resource id sits in the input, e.g. `containerId`. */
  readonly resourceIdPath?: string;
}

export interface CallContext {
  readonly callId: string;
  readonly operation: string;
  readonly identity: Identity | null;
  /** Fires on call.aborted, deadline, disconnect or server shutdown. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** Epoch milliseconds at which the call times out, when it has a deadline. */
  readonly deadlineAt: number | undefined;
}

export type StreamSource<T> = Observable<T> | AsyncIterable<T>;

interface OperationBase<I extends z.ZodType, O extends z.ZodType> {
  readonly name: string;
  readonly description?: string;
  readonly input: I;
  readonly output: O;
  readonly errors?: Readonly<Record<string, DeclaredError>>;
  readonly access?: AccessControl;
  readonly visibility?: 'external' | 'internal';
  /**
   * Running it twice has the effect of running it once, so a caller may retry it
   * after a retryable error such as TIMEOUT (spec §6.1). Default: queries are,
   * mutations and subscriptions are not.
   */
  readonly idempotent?: boolean;
}

export interface UnaryOperation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> extends OperationBase<I, O> {
  readonly kind: 'query' | 'mutation';
  readonly handler: (input: z.output<I>, ctx: CallContext) => z.input<O> | Promise<z.input<O>>;
}

export interface SubscriptionOperation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> extends OperationBase<I, O> {
  readonly kind: 'subscription';
  readonly handler: (input: z.output<I>, ctx: CallContext) => StreamSource<z.input<O>>;
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
