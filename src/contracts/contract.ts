import type { z } from 'zod';

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

/**
 * What caller and callee agree on for one operation, with no handler: its name,
 * kind and schemas. The server implements it (`defineOperation({ ...contract,
 * handler })`); the client calls it with types inferred (`client.call(contract,
 * input)`), as connect-es shares one method descriptor between both sides.
 */
export interface Contract<K extends OperationKind = OperationKind, I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly kind: K;
  readonly description?: string;
  readonly input: I;
  readonly output: O;
  readonly errors?: Readonly<Record<string, DeclaredError>>;
  readonly access?: AccessControl;
  readonly visibility?: 'external' | 'internal';
  /** Safe to retry after a retryable error (spec §6.1). Default: queries are, the rest are not. */
  readonly idempotent?: boolean;
  /** Schema of each item of the call's input stream (spec §4.7); absent: the operation takes none. */
  readonly inputStream?: z.ZodType;
  /**
   * For an operation that runs a command: the command's end, read from the stream's
   * terminal item (an exec's `{exitCode, terminal: true}`), undefined for other items.
   * A transport or client reports an exit status with it, knowing no operation by name.
   */
  readonly commandEnd?: (item: unknown) => CommandEnd | undefined;
  /**
   * For an operation that copies files out of or into a container (spec §12, ARC-7):
   * which way, and the copy's end read from the stream's terminal item. The audit log
   * records every copy by it, knowing no operation by name.
   */
  readonly copy?: CopyKind;
}

/** Which way an operation copies, and how its terminal item says how much went. */
export interface CopyKind {
  /** `out` of the container, or `in`. */
  readonly direction: 'out' | 'in';
  readonly end: (item: unknown) => CopyEnd | undefined;
}

/** How much a copy carried, as its terminal item says (ARC-6). */
export interface CopyEnd {
  readonly bytes: number;
  readonly sha256: string;
}

/** How a command ended, as its operation's terminal item says (spec §12). */
export interface CommandEnd {
  readonly exitCode: number;
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
}

export type UnaryContract<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> = Contract<'query' | 'mutation', I, O>;
export type SubscriptionContract<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> = Contract<'subscription', I, O>;

/** What a caller sends: the schema's input side (defaults may be left out). */
export type InputOf<C extends Contract> = z.input<C['input']>;
/** What a caller receives: the schema's output side. */
export type OutputOf<C extends Contract> = z.output<C['output']>;

/** Declares a contract; the identity function that keeps its literal types. */
export function defineContract<K extends OperationKind, I extends z.ZodType, O extends z.ZodType>(contract: Contract<K, I, O>): Contract<K, I, O> {
  return contract;
}
