import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { GatewaySettings, NatsSettings } from '../fleet/index.js';

export interface NatsFlags {
  nats?: string;
  natsUser?: string;
  natsPassFile?: string;
  natsCa?: string;
  natsInsecure?: boolean;
}

export interface GatewayFlags extends NatsFlags {
  pin: string[];
  fleetListDeadline: string;
  fleetForgetAfter: string;
}

/** The flags that say how to reach the NATS cluster, for `serve --nats` and `agent`. */
export function natsOptions(command: Command, required: boolean): Command {
  const urls = 'NATS servers, comma separated (nats://host:4222 or tls://host:4222), one per node: failover between them';
  return (required ? command.requiredOption('--nats <urls>', urls) : command.option('--nats <urls>', `be a fleet gateway: ${urls}`))
    .option('--nats-user <name>', 'NATS user (or CALLWIRE_NATS_USER)')
    .option('--nats-pass-file <file>', 'a file holding the NATS password (or CALLWIRE_NATS_PASS); never on the command line, where ps shows it')
    .option('--nats-ca <file>', 'PEM certificate of the CA that signed the NATS servers\' certificates (tls:// URLs)')
    .option('--nats-insecure', 'run without NATS credentials, or on a NATS server that asks for none: anyone who reaches it can then pose as a gateway and run commands on every host (refused without this flag)');
}

/** The gateway's routing flags (`serve --nats`, docs/fleet.md "Security"). */
export function gatewayOptions(command: Command): Command {
  return command
    .option('--pin <name=host>', 'with --nats: the container NAME (or PREFIX*) resolves to HOST only, whatever other hosts announce (repeatable)', (v: string, all: string[]) => [...all, v], [])
    .option('--fleet-list-deadline <seconds>', 'with --nats: how long a merged list waits for each host; a later one is listed in unavailable', '5')
    .option('--fleet-forget-after <seconds>', 'with --nats: how long a down host\'s names stay reserved for it before the gateway forgets the host', '86400');
}

/** The fleet's code (and NATS's) is loaded only when --nats asks for it: a plain `serve` starts without it. */
export async function natsSettings(flags: NatsFlags): Promise<NatsSettings | undefined> {
  if (flags.nats === undefined) return undefined;
  const { parseNatsUrls } = await import('../fleet/index.js');
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
  return { servers, ...(user ? { user } : {}), ...(pass ? { pass } : {}), ...(flags.natsCa ? { caFile: flags.natsCa } : {}), ...(flags.natsInsecure ? { insecure: true } : {}) };
}

export async function gatewaySettings(flags: GatewayFlags): Promise<GatewaySettings | undefined> {
  const nats = await natsSettings(flags);
  if (!nats) {
    if (flags.pin.length > 0) throw new Error('--pin goes with --nats (a fleet gateway)');
    return undefined;
  }
  const { parsePin } = await import('../fleet/index.js');
  return {
    ...nats,
    pins: flags.pin.map(parsePin),
    listDeadlineMs: positiveSeconds(flags.fleetListDeadline, '--fleet-list-deadline') * 1000,
    forgetAfterMs: positiveSeconds(flags.fleetForgetAfter, '--fleet-forget-after') * 1000,
  };
}

/** What a banner says of a NATS connection run with --nats-insecure. */
export const INSECURE_NATS = 'INSECURE (--nats-insecure): NATS may not authenticate; anyone who reaches it can pose as a gateway';

function positiveSeconds(value: string, flag: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new Error(`${flag} must be a number of seconds above 0, not "${value}"`);
  return n;
}
