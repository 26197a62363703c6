#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { registerServe } from './commands/serve.js';

const program = new Command()
  .name('callwire')
  .description('callwire: streaming RPC, above all docker exec from anywhere')
  .showHelpAfterError()
  .exitOverride();

registerServe(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : 2;
  } else {
    process.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
