import { z } from 'zod';
import { checkAccess, defineOperation, describeOperation, isIdempotent, namespaceOf, type Operation, type Registry } from '../dispatcher/index.js';
import { RpcError } from '../protocol/index.js';
import type { Identity } from '../dispatcher/index.js';

/** spec/PROTOCOL.md §11.8: an operation is discoverable when it is external and callable. */
function callable(op: Operation, identity: Identity | null): boolean {
  return op.visibility !== 'internal' && checkAccess(op.access, identity) === undefined;
}

const kind = z.enum(['query', 'mutation', 'subscription']);

// `op_type` repeats `kind` under the reference's name, for its clients (spec §13).
const listOutput = z.object({
  operations: z.array(z.object({ name: z.string(), namespace: z.string(), kind, op_type: kind, idempotent: z.boolean(), description: z.string() })),
});

const schemaOutput = z.object({
  name: z.string(),
  namespace: z.string(),
  kind,
  op_type: kind,
  idempotent: z.boolean(),
  visibility: z.enum(['external', 'internal']),
  description: z.string(),
  input_schema: z.unknown(),
  output_schema: z.unknown(),
  error_schemas: z.array(z.object({ code: z.string(), description: z.string(), schema: z.unknown(), http_status: z.number().optional() })),
  access_control: z.object({
    required_scopes: z.array(z.string()),
    required_scopes_any: z.array(z.string()),
    resource_type: z.string().optional(),
    resource_action: z.string().optional(),
    resource_id_path: z.string().optional(),
  }),
});

/** `services/list` and `services/schema`, ordinary operations over `registry`. */
export function discoveryOperations(registry: Registry): Operation[] {
  const list = defineOperation({
    name: 'services/list',
    kind: 'query',
    description: 'The operations the caller may call: name, namespace and kind.',
    input: z.object({ namespace: z.string().optional() }).nullable(),
    output: listOutput,
    handler: (input, ctx) => ({
      operations: registry
        .list()
        .filter((op) => callable(op, ctx.identity))
        .filter((op) => !input?.namespace || namespaceOf(op.name) === input.namespace)
        .map((op) => ({ name: op.name, namespace: namespaceOf(op.name), kind: op.kind, op_type: op.kind, idempotent: isIdempotent(op), description: op.description ?? '' })),
    }),
  });
  const schema = defineOperation({
    name: 'services/schema',
    kind: 'query',
    description: 'The full spec of one operation, with JSON Schemas (draft 2020-12) for input, output and errors.',
    input: z.object({ name: z.string().min(1) }),
    output: schemaOutput,
    handler: ({ name }, ctx) => {
      const op = registry.lookup(name);
      // Operations the caller may not call are as unknown here as on the wire.
      if (!op || !callable(op, ctx.identity)) throw RpcError.of('NOT_FOUND', `unknown operation: ${name}`);
      return describeOperation(op);
    },
  });
  return [list, schema];
}
