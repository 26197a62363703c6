import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseNatsUrls, type NatsSettings } from '../fleet/index.js';

export interface NatsFlags {
  nats?: string;
  natsUser?: string;
  natsPassFile?: string;
  natsCa?: string;
}

/** The flags that say how to reach the NATS cluster, for `serve --nats` and `agent`. */
export function natsOptions(command: Command, required: boolean): Command {
  const urls = 'NATS servers, comma separated (nats://host:4222 or tls://host:4222), one per node: failover between them';
  return (required ? command.requiredOption('--nats <urls>', urls) : command.option('--nats <urls>', `be a fleet gateway: ${urls}`))
    .option('--nats-user <name>', 'NATS user (or CALLWIRE_NATS_USER)')
    .option('--nats-pass-file <file>', 'a file holding the NATS password (or CALLWIRE_NATS_PASS); never on the command line, where ps shows it')
    .option('--nats-ca <file>', 'PEM certificate of the CA that signed the NATS servers\' certificates (tls:// URLs)');
}

export function natsSettings(flags: NatsFlags): NatsSettings | undefined {
  if (flags.nats === undefined) return undefined;
  const servers = parseNatsUrls(flags.nats);
  if (servers.length === 0) throw new Error('--nats names no server');
  const user = flags.natsUser ?? process.env['CALLWIRE_NATS_USER'];
  let pass = process.env['CALLWIRE_NATS_PASS'];
  if (flags.natsPassFile !== undefined) {
    try {
      pass = readFileSync(flags.natsPassFile, 'utf8').trim();
    } catch (error) {
      throw new Error(`cannot read --nats-pass-file ${flags.natsPassFile}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  }
  return { servers, ...(user ? { user } : {}), ...(pass ? { pass } : {}), ...(flags.natsCa ? { caFile: flags.natsCa } : {}) };
}
