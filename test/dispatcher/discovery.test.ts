import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { MemoryConnection } from '../../src/testing/index.js';
import { sampleRegistry } from '../support/sample-ops.js';

async function call(conn: MemoryConnection, id: string, op: string, input: unknown) {
  conn.client.request(id, op, input);
  return conn.client.nextFor(id);
}

describe('discovery operations (spec §11.8)', () => {
  it('services/list shows only what the caller may call', async () => {
    const { registry } = sampleRegistry();
    const anon = new MemoryConnection({ registry });
    const r = await call(anon, 'l', 'services/list', null);
    const names = r.type === 'call.responded' ? (r.payload.output as { operations: { name: string }[] }).operations.map((o) => o.name) : [];
    expect(names).toContain('test/echo');
    expect(names).toContain('services/schema');
    expect(names).not.toContain('test/secret');
    expect(names).not.toContain('test/internal');
    const full = new MemoryConnection({ registry, identity: { subject: 's', scopes: ['secret:read', 'secret:write'] } });
    const r2 = await call(full, 'l', 'services/list', { namespace: 'test' });
    const names2 = r2.type === 'call.responded' ? (r2.payload.output as { operations: { name: string; namespace: string; kind: string }[] }).operations : [];
    expect(names2.map((o) => o.name)).toContain('test/secret');
    expect(names2.every((o) => o.namespace === 'test')).toBe(true);
    expect(names2.find((o) => o.name === 'test/ticker')?.kind).toBe('subscription');
  });

  it('services/schema returns valid JSON Schemas, declared errors and access control', async () => {
    const { registry } = sampleRegistry();
    const conn = new MemoryConnection({ registry });
    const r = await call(conn, 's', 'services/schema', { name: 'test/fail' });
    expect(r.type).toBe('call.responded');
    const spec = (r.type === 'call.responded' ? r.payload.output : {}) as Record<string, unknown>;
    const ajv = new Ajv2020.default({ strict: false });
    const validateInput = ajv.compile(spec['input_schema'] as object);
    expect(validateInput({ mode: 'declared' })).toBe(true);
    expect(validateInput({ mode: 'nope' })).toBe(false);
    expect(ajv.validateSchema(spec['output_schema'] as object)).toBe(true);
    const errors = spec['error_schemas'] as { code: string; schema: object; http_status: number }[];
    expect(errors[0]).toMatchObject({ code: 'WIDGET_MISSING', http_status: 404 });
    expect(ajv.compile(errors[0]!.schema)({ widget: 'w' })).toBe(true);
    expect(spec['access_control']).toEqual({ required_scopes: [], required_scopes_any: [] });
  });

  it('services/schema answers NOT_FOUND for internal, unknown and forbidden operations', async () => {
    const { registry } = sampleRegistry();
    const conn = new MemoryConnection({ registry });
    for (const name of ['test/internal', 'test/nothing', 'test/secret']) {
      const r = await call(conn, name, 'services/schema', { name });
      expect(r.type === 'call.error' && r.payload.code, name).toBe('NOT_FOUND');
    }
  });
});
