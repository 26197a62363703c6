import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { resultRecord } from '../../src/outcome/index.js';

const read = (name: string): object => JSON.parse(readFileSync(new URL(`../../spec/cli/${name}`, import.meta.url), 'utf8')) as object;

describe('spec/cli/terminal-envelope.schema.json, the result record schema\'s old path', () => {
  it('still validates exactly what result-record.schema.json does, for links published before the rename', () => {
    const ajv = new Ajv2020.default({ strict: false, allErrors: true });
    ajv.addSchema(read('result-record.schema.json'));
    const old = ajv.compile(read('terminal-envelope.schema.json'));
    const record = resultRecord({ command: 'call', outcome: 'success', failure_boundary: 'none', operation: 'services/list', call_id: 'c1', events_seen: 1, output: { operations: [] } });
    expect(old(record)).toBe(true);
    const { kind: _kind, ...withoutKind } = record;
    expect(old(withoutKind)).toBe(false);
    expect(old({ ...record, exit_code: 'zero' })).toBe(false);
  });
});
