import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';

const schema = JSON.parse(readFileSync(new URL('../../spec/cli/result-record.schema.json', import.meta.url), 'utf8')) as object;
const ajv = new Ajv2020.default({ strict: false, allErrors: true });
const validate = ajv.compile(schema);

/** Parses stdout as exactly one result record line and validates it against the published schema. */
export function parseResultRecord(stdout: string): Record<string, unknown> {
  const lines = stdout.split('\n').filter((l) => l.length > 0);
  if (lines.length !== 1) throw new Error(`expected exactly one result record line, got ${lines.length}: ${stdout.slice(0, 300)}`);
  const value = JSON.parse(lines[0]!) as Record<string, unknown>;
  if (!validate(value)) throw new Error(`result record fails the schema: ${ajv.errorsText(validate.errors)}\n${lines[0]}`);
  return value;
}
