import { z } from 'zod';
import { isIdempotent, type Operation } from './operation.js';

/** The discovery form of an operation (spec/PROTOCOL.md §11.8), JSON Schemas from zod. */
export interface OperationSpec {
  readonly name: string;
  readonly namespace: string;
  readonly kind: Operation['kind'];
  /** The reference's name for `kind` (spec §13). */
  readonly op_type: Operation['kind'];
  readonly idempotent: boolean;
  readonly visibility: 'external' | 'internal';
  readonly description: string;
  readonly input_schema: unknown;
  readonly output_schema: unknown;
  readonly error_schemas: { code: string; description: string; schema: unknown; http_status?: number }[];
  readonly access_control: {
    readonly required_scopes: string[];
    readonly required_scopes_any: string[];
    readonly resource_type?: string;
    readonly resource_action?: string;
    readonly resource_id_path?: string;
  };
}

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
