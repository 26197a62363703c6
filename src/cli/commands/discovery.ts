import type { Command } from 'commander';
import { connectFrom, globalFlags, toJsonLine, writeOut } from '../context.js';

export function registerDiscovery(program: Command): void {
  program
    .command('ops')
    .description('list the operations you may call')
    .action(async (_opts: unknown, command: Command) => {
      const flags = globalFlags(command);
      const client = await connectFrom(flags);
      try {
        const ops = await client.listOperations();
        if (flags.json) await writeOut(`${toJsonLine(ops)}\n`);
        else {
          const width = Math.max(4, ...ops.map((o) => o.name.length));
          // One line per operation: a description's first paragraph says what it does; `schema` shows the rest.
          const lines = ops.map((o) => `${o.name.padEnd(width)}  ${o.kind.padEnd(12)}  ${o.description.split('\n')[0]}`);
          await writeOut(`${['NAME'.padEnd(width) + '  KIND          DESCRIPTION', ...lines].join('\n')}\n`);
        }
      } finally {
        await client.close();
      }
    });

  program
    .command('schema <operation>')
    .description('show one operation: kind, input and output JSON Schemas, errors, access control')
    .action(async (operation: string, _opts: unknown, command: Command) => {
      const flags = globalFlags(command);
      const client = await connectFrom(flags);
      try {
        const spec = (await client.schema(operation)) as {
          name: string;
          kind: string;
          description: string;
          input_schema: unknown;
          output_schema: unknown;
          error_schemas: { code: string; description: string }[];
          access_control: { required_scopes: string[]; required_scopes_any: string[] };
        };
        if (flags.json) {
          await writeOut(`${toJsonLine(spec)}\n`);
          return;
        }
        const access = [...spec.access_control.required_scopes, ...spec.access_control.required_scopes_any.map((s) => `any of ${s}`)];
        await writeOut(
          [
            `${spec.name} (${spec.kind})`,
            spec.description,
            '',
            `access: ${access.length > 0 ? access.join(', ') : 'no scope required'}`,
            `errors: ${spec.error_schemas.map((e) => `${e.code} (${e.description})`).join('; ') || 'protocol codes only'}`,
            '',
            'input schema:',
            JSON.stringify(spec.input_schema, null, 2),
            '',
            'output schema:',
            JSON.stringify(spec.output_schema, null, 2),
            '',
          ].join('\n'),
        );
      } finally {
        await client.close();
      }
    });
}
