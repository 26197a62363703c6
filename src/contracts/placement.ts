import type { z } from 'zod';
import type { Contract, OperationKind } from './contract.js';

/**
 * Where a fleet gateway runs an engine operation (docs/fleet.md): the one fact it routes
 * by, declared with the operation, so a gateway needs no engine and reads no schema to
 * know it.
 */
export type Placement =
  /** On the host that holds the container the input's `containerId` names: `HOST/NAME`, or an id or name one host holds. */
  | { readonly kind: 'container' }
  /** On one host: the one the caller names in `host`, or the only one it may reach. */
  | { readonly kind: 'host' }
  /** As `host`, and the answer's `containerId` is a new container of that host's, answered with its `host`. */
  | { readonly kind: 'new-container' }
  /** On every host the caller may reach (or the one it names): the answers' `rows` merged, each row with its `host`. */
  | EveryHost;

export interface EveryHost {
  readonly kind: 'every-host';
  /** The answer's one field, an array of `row`s. */
  readonly rows: string;
  readonly row: z.ZodObject;
  /** The input when it is not null; none: the input is null. */
  readonly filter?: z.ZodObject;
}

/** An engine operation's contract, with where a fleet runs it; an input the gateway adds `host` to is an object. */
export type PlacedContract =
  | (Contract<OperationKind, z.ZodObject> & { readonly placement: { readonly kind: 'container' } })
  | (Contract<OperationKind, z.ZodObject> & { readonly placement: { readonly kind: 'host' } })
  | (Contract<OperationKind, z.ZodObject, z.ZodObject> & { readonly placement: { readonly kind: 'new-container' } })
  | (Contract & { readonly placement: EveryHost });

/** Declares an engine operation's contract and its placement; the identity function that keeps its literal types. */
export function placed<K extends OperationKind, I extends z.ZodType, O extends z.ZodType, P extends Placement>(
  contract: Contract<K, I, O> & { readonly placement: P },
): Contract<K, I, O> & { readonly placement: P } {
  return contract;
}
