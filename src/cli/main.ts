#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { DEFAULT_URL } from './defaults.js';
import { execCommandAfterContainer, subcommandOf } from './operands.js';

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

// Each command's module is loaded only when it runs: a process pays for the client, the
// server or the conformance suite only if its command needs it (docs/cli.md "Start-up").
// Without a known command (help, a typo) every command is registered, for the list and
// commander's suggestions.
const commands: Record<string, () => Promise<(program: Command) => void>> = {
  serve: async () => (await import('./commands/serve.js')).registerServe,
  agent: async () => (await import('./commands/agent.js')).registerAgent,
  ops: async () => (await import('./commands/discovery.js')).registerDiscovery,
  schema: async () => (await import('./commands/discovery.js')).registerDiscovery,
  call: async () => (await import('./commands/call.js')).registerCall,
  subscribe: async () => (await import('./commands/subscribe.js')).registerSubscribe,
  exec: async () => (await import('./commands/exec.js')).registerExec,
  cp: async () => (await import('./commands/cp.js')).registerCp,
  conformance: async () => (await import('./commands/conformance.js')).registerConformance,
};
const args = process.argv.slice(2);
const named = subcommandOf(args, program);
const load = named === undefined ? undefined : Object.hasOwn(commands, named) ? commands[named] : undefined;
if (load) {
  (await load())(program);
} else if (named !== undefined || !(args.includes('-V') || args.includes('--version'))) {
  const registers = new Set(await Promise.all(Object.values(commands).map((loadOne) => loadOne())));
  for (const register of registers) register(program);
  program.addHelpText('after', await exitCodeHelp());
}

/** The program's help ends with the exit codes and the error codes' outcomes. */
async function exitCodeHelp(): Promise<string> {
  const { outcomes, codeOutcomes } = await import('../outcome/index.js');
  const table = (Object.entries(outcomes) as [string, { exit: number; execExit: number; meaning: string }][])
    .map(([name, o]) => `  ${name.padEnd(24)} ${String(o.exit).padStart(3)}   ${String(o.execExit).padStart(3)}   ${o.meaning}`)
    .join('\n');
  const mapping = Object.entries(codeOutcomes)
    .map(([code, c]) => `  ${code.padEnd(24)} → ${c.outcome}`)
    .join('\n');
  return `
Exit codes (call | exec). exec exits with the command's own code when it ran to the end;
these are for everything else:
  outcome                 call  exec
${table}

Error codes → outcomes (other declared codes, e.g. CONTAINER_NOT_FOUND → operation_failure):
${mapping}
`;
}

try {
  await program.parseAsync(execCommandAfterContainer(process.argv, program));
} catch (error) {
  // --help and --version end here too, with exit code 0, and need nothing more.
  if (!(error instanceof CommanderError && error.exitCode === 0)) await fail(error);
}

/** Bad flags are invalid input (with --json, one result record line); anything else is ours. */
async function fail(error: unknown): Promise<void> {
  const { outcomes, resultRecord } = await import('../outcome/index.js');
  if (!(error instanceof CommanderError)) {
    process.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = outcomes.infrastructure_failure.exit;
    return;
  }
  const sub = named;
  process.exitCode = outcomes.invalid_input[sub === 'exec' || sub === 'cp' ? 'execExit' : 'exit'];
  if (args.includes('--json') && (sub === 'call' || sub === 'exec')) {
    const line = resultRecord({
      command: sub,
      outcome: 'invalid_input',
      failure_boundary: 'input',
      operation: sub === 'exec' ? 'docker/container/exec' : (args[args.indexOf('call') + 1] ?? 'unknown'),
      call_id: null,
      events_seen: 0,
      diagnostics: [{ code: error.code, message: error.message }],
    });
    const { toJsonLine } = await import('./context.js');
    process.stdout.write(`${toJsonLine(line)}\n`);
  }
}
