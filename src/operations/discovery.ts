import { listContract, schemaContract } from '../contracts/index.js';
import { checkAccess, defineOperation, describeOperation, isIdempotent, namespaceOf, type Operation, type Registry } from '../dispatcher/index.js';
import { RpcError } from '../protocol/index.js';
import type { Identity } from '../dispatcher/index.js';

/** spec/PROTOCOL.md §11.8: an operation is discoverable when it is external and callable. */
function callable(op: Operation, identity: Identity | null): boolean {
  return op.visibility !== 'internal' && checkAccess(op.access, identity) === undefined;
}

/** `services/list` and `services/schema`, ordinary operations over `registry`. */
export function discoveryOperations(registry: Registry): Operation[] {
  const list = defineOperation({
    ...listContract,
    handler: (input, ctx) => ({
      operations: registry
        .list()
        .filter((op) => callable(op, ctx.identity))
        .filter((op) => !input?.namespace || namespaceOf(op.name) === input.namespace)
        .map((op) => ({ name: op.name, namespace: namespaceOf(op.name), kind: op.kind, op_type: op.kind, idempotent: isIdempotent(op), description: op.description ?? '' })),
    }),
  });
  const schema = defineOperation({
    ...schemaContract,
    handler: ({ name }, ctx) => {
      const op = registry.lookup(name);
      // Operations the caller may not call are as unknown here as on the wire.
      if (!op || !callable(op, ctx.identity)) throw RpcError.of('NOT_FOUND', `unknown operation: ${name}`);
      return describeOperation(op);
    },
  });
  return [list, schema];
}
