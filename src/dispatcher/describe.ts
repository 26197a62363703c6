import { z } from 'zod';
import type { OperationSpec } from '../contracts/index.js';
import { isIdempotent, type Operation } from './operation.js';

export type { OperationSpec } from '../contracts/index.js';

export function namespaceOf(name: string): string {
  return name.split('/')[0] ?? name;
}

export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): unknown {
  return z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    override(ctx) {
      // Bytes (z.instanceof(Uint8Array)) travel as msgpack bin / JSON {"$base64"} (§5.3).
      const def = (ctx.zodSchema as { _zod?: { def?: { type?: string } } })._zod?.def;
      if (def?.type === 'custom' && Object.keys(ctx.jsonSchema).length === 0) {
        Object.assign(ctx.jsonSchema, { description: 'bytes: msgpack bin, or {"$base64": string} in JSON' });
      }
    },
  });
}

/** The discovery form of an operation (spec/PROTOCOL.md §11.8, `operationSpec` in contracts), JSON Schemas from zod. */
export function describeOperation(op: Operation): OperationSpec {
  const access = op.access ?? {};
  return {
    name: op.name,
    namespace: namespaceOf(op.name),
    kind: op.kind,
    op_type: op.kind,
    idempotent: isIdempotent(op),
    visibility: op.visibility ?? 'external',
    description: op.description ?? '',
    input_schema: toJsonSchema(op.input, 'input'),
    ...(op.inputStream ? { input_stream_schema: toJsonSchema(op.inputStream, 'input') } : {}),
    output_schema: toJsonSchema(op.output, 'output'),
    error_schemas: Object.entries(op.errors ?? {}).map(([code, e]) => ({
      code,
      description: e.description,
      schema: e.details ? toJsonSchema(e.details, 'output') : {},
      ...(e.httpStatus === undefined ? {} : { http_status: e.httpStatus }),
    })),
    access_control: {
      required_scopes: [...(access.requiredScopes ?? [])],
      required_scopes_any: [...(access.requiredScopesAny ?? [])],
      ...(access.resourceType === undefined ? {} : { resource_type: access.resourceType }),
      ...(access.resourceAction === undefined ? {} : { resource_action: access.resourceAction }),
      ...(access.resourceIdPath === undefined ? {} : { resource_id_path: access.resourceIdPath }),
    },
  };
}
