import { z } from 'zod';
import { defineContract } from './contract.js';

const kind = z.enum(['query', 'mutation', 'subscription']);

/** One operation as `services/list` shows it; `op_type` repeats `kind` under the reference's name (spec §13). */
export const operationSummary = z.object({ name: z.string(), namespace: z.string(), kind, op_type: kind, idempotent: z.boolean(), description: z.string() });

/** One operation as `services/schema` shows it, with JSON Schemas (draft 2020-12; spec §11.8). */
export const operationSpec = z.object({
  name: z.string(),
  namespace: z.string(),
  kind,
  op_type: kind,
  idempotent: z.boolean(),
  visibility: z.enum(['external', 'internal']),
  description: z.string(),
  input_schema: z.unknown(),
  /** The schema of each input stream item (§4.7), for operations that take an input stream. */
  input_stream_schema: z.unknown().optional(),
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

export type OperationSummary = z.output<typeof operationSummary>;
export type OperationSpec = z.output<typeof operationSpec>;

export const listContract = defineContract({
  name: 'services/list',
  kind: 'query',
  description: 'The operations the caller may call: name, namespace, kind (and op_type), idempotency.',
  input: z.object({ namespace: z.string().optional() }).nullable(),
  output: z.object({ operations: z.array(operationSummary) }),
});

export const schemaContract = defineContract({
  name: 'services/schema',
  kind: 'query',
  description: 'The full spec of one operation, with JSON Schemas (draft 2020-12) for input, output and errors.',
  input: z.object({ name: z.string().min(1) }),
  output: operationSpec,
});
