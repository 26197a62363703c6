#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { registerAgent } from './commands/agent.js';
import { registerCall } from './commands/call.js';
import { registerConformance } from './commands/conformance.js';
import { registerCp } from './commands/cp.js';
import { registerDiscovery } from './commands/discovery.js';
import { registerExec } from './commands/exec.js';
import { registerServe } from './commands/serve.js';
import { registerSubscribe } from './commands/subscribe.js';
import { DEFAULT_URL, toJsonLine } from './context.js';
import { execCommandAfterContainer, subcommandOf } from './operands.js';
import { resultRecord } from '../outcome/index.js';
import { codeOutcomes, outcomes } from '../outcome/index.js';

// The package's own manifest, two levels up from both src/cli and dist/cli.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command()
  .name('callwire')
  .version(version, '-V, --version', "print callwire's version and exit")
  .description('callwire: streaming RPC; above all, docker exec from anywhere with the exact output and exit code')
  .option('--url <url>', 'server: ws://, wss:// (WebSocket) or https:// (WebTransport); or CALLWIRE_URL', process.env['CALLWIRE_URL'] ?? DEFAULT_URL)
  .option('--token <token>', 'bearer token (or CALLWIRE_TOKEN); never printed, never passed on')
  .option('--cert-hash <sha256>', 'SHA-256 of a self-signed WebTransport server certificate (serve prints it)')
  .option('--timeout <duration>', 'deadline for call and exec, e.g. 30s (sent to the server as deadline_ms)')
  .option('--json', 'machine-readable output: call and exec print one result record line')
  .option('--quiet', 'no ready marker (subscribe)')
  .addOption(new Option('--codec <codec>', 'wire encoding').choices(['msgpack', 'json']).default('msgpack'))
  .addOption(
    new Option('--transport <carrier>', 'ws (ws:// URLs), h3 or h2 (https:// URLs: WebTransport over HTTP/3 or HTTP/2), or auto: HTTP/3 where it answers within 300 ms, else HTTP/2')
      .choices(['auto', 'h3', 'h2', 'ws'])
      .default('auto'),
  )
  .showHelpAfterError('(callwire --help lists commands, flags and exit codes)')
  .configureOutput({ outputError: (text, write) => write(text.startsWith('error:') ? `Error: ${text.slice('error: '.length)}` : text) })
  .exitOverride();

const table = (Object.entries(outcomes) as [string, { exit: number; execExit: number; meaning: string }][])
  .map(([name, o]) => `  ${name.padEnd(24)} ${String(o.exit).padStart(3)}   ${String(o.execExit).padStart(3)}   ${o.meaning}`)
  .join('\n');
const mapping = Object.entries(codeOutcomes)
  .map(([code, c]) => `  ${code.padEnd(24)} → ${c.outcome}`)
  .join('\n');
program.addHelpText(
  'after',
  `
Exit codes (call | exec). exec exits with the command's own code when it ran to the end;
these are for everything else:
  outcome                 call  exec
${table}

Error codes → outcomes (other declared codes, e.g. CONTAINER_NOT_FOUND → operation_failure):
${mapping}
`,
);

registerServe(program);
registerAgent(program);
registerDiscovery(program);
registerCall(program);
registerSubscribe(program);
registerExec(program);
registerCp(program);
registerConformance(program);

try {
  await program.parseAsync(execCommandAfterContainer(process.argv, program));
} catch (error) {
  if (error instanceof CommanderError) {
    // --help and --version exit 0; bad flags are invalid input.
    const args = process.argv.slice(2);
    const sub = subcommandOf(args, program);
    process.exitCode = error.exitCode === 0 ? 0 : outcomes.invalid_input[sub === 'exec' || sub === 'cp' ? 'execExit' : 'exit'];
    // --json promises one result record line, flag errors included.
    if (error.exitCode !== 0 && args.includes('--json') && (sub === 'call' || sub === 'exec')) {
      const line = resultRecord({
        command: sub,
        outcome: 'invalid_input',
        failure_boundary: 'input',
        operation: sub === 'exec' ? 'docker/container/exec' : (args[args.indexOf('call') + 1] ?? 'unknown'),
        call_id: null,
        events_seen: 0,
        diagnostics: [{ code: error.code, message: error.message }],
      });
      process.stdout.write(`${toJsonLine(line)}\n`);
    }
  } else {
    process.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = outcomes.infrastructure_failure.exit;
  }
}
