import type { Command } from 'commander';
import { stderrLogger, type LogLevel } from '../logger.js';
import { natsOptions, natsSettings, type NatsFlags } from '../nats-flags.js';

interface AgentFlags extends NatsFlags {
  hostId: string;
  logLevel: LogLevel;
  grace: string;
}

export function registerAgent(program: Command): void {
  const command = program
    .command('agent')
    .description('join a fleet (docs/fleet.md): serve this machine\'s Docker engine (DOCKER_HOST, or the local socket) to the gateways on a NATS cluster; listens on no port')
    .requiredOption('--host-id <id>', 'this host\'s name in the fleet: [a-z0-9][a-z0-9_-]{0,62}; callers write HOST/NAME');
  natsOptions(command, true)
    .option('--grace <seconds>', 'on SIGINT/SIGTERM, how long live calls may finish before they are aborted', '10')
    .option('--log-level <level>', 'debug | info | warn | error', 'info')
    .action(async (flags: AgentFlags) => {
      const { startAgent } = await import('../../fleet/index.js');
      const { dockerEngine } = await import('../../server/index.js');
      const settings = natsSettings(flags);
      if (!settings) throw new Error('--nats is required');
      const agent = await startAgent({ nats: settings, hostId: flags.hostId, engine: dockerEngine(), logger: stderrLogger(flags.logLevel) });
      process.stdout.write(
        [
          'callwire agent is serving',
          `  host          ${agent.hostId}`,
          `  nats          ${settings.servers.join(', ')}${settings.user ? ` as ${settings.user}` : ''}`,
          `  docker        ${agent.engine.ok ? 'on' : 'not answering'}: ${agent.engine.reason}`,
          '',
        ].join('\n'),
      );
      const graceMs = Number(flags.grace) * 1000;
      let stopping = false;
      const stop = (signal: string): void => {
        if (stopping) process.exit(130);
        stopping = true;
        process.stderr.write(`[callwire] ${signal}: leaving the fleet; live calls have ${graceMs / 1000}s to finish\n`);
        agent.close(graceMs).then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
    });
}
