import type { Command } from 'commander';
import { outcomes } from '../../outcome/index.js';
import { stderrLogger, type LogLevel } from '../logger.js';
import { INSECURE_NATS, natsOptions, natsSettings, type NatsFlags } from '../nats-flags.js';
import { missingLongLivedFlags } from '../node-flags.js';
import { onShutdownSignals } from '../signals.js';

interface AgentFlags extends NatsFlags {
  hostId: string;
  metrics?: string;
  logLevel: LogLevel;
  grace: string;
}

export function registerAgent(program: Command): void {
  const command = program
    .command('agent')
    .description('join a fleet (docs/fleet.md): serve this machine\'s Docker engine (DOCKER_HOST, or the local socket) to the gateways on a NATS cluster; listens on no port')
    .requiredOption('--host-id <id>', 'this host\'s name in the fleet: [a-z0-9][a-z0-9_-]{0,62}; callers write HOST/NAME');
  natsOptions(command, true)
    .option('--metrics <host:port>', 'serve GET /metrics (Prometheus text) on this address, the agent\'s only listener; anyone who reaches it reads call counts, so keep it on loopback or a private network')
    .option('--grace <seconds>', 'on SIGINT/SIGTERM, how long live calls may finish before they are aborted', '10')
    .option('--log-level <level>', 'debug | info | warn | error', 'info')
    .action(async (flags: AgentFlags) => {
      const { startAgent } = await import('../../fleet/index.js');
      const { createMetrics, dockerEngine, serveMetrics } = await import('../../server/index.js');
      const settings = await natsSettings(flags);
      if (!settings) throw new Error('--nats is required');
      const metricsAt = flags.metrics === undefined ? undefined : hostPort(flags.metrics);
      const engine = dockerEngine();
      const logger = stderrLogger(flags.logLevel);
      let metrics: ReturnType<typeof createMetrics> | undefined;
      const agent = await startAgent({
        nats: settings,
        hostId: flags.hostId,
        engine,
        logger,
        ...(metricsAt
          ? {
              instrument: ({ registry, sessions, natsReconnects }) => {
                metrics = createMetrics({ operations: registry, engine });
                metrics.watchSessions(sessions);
                metrics.watchFleet(() => ({ natsReconnects: natsReconnects() }));
                return { observe: metrics.observe, observeRefusals: metrics.observeRefusals };
              },
            }
          : {}),
      });
      const listener = metrics && metricsAt ? await serveMetrics(metrics, metricsAt.host, metricsAt.port, { logger }) : undefined;
      const missing = missingLongLivedFlags();
      process.stdout.write(
        [
          'callwire agent is serving',
          `  host          ${agent.hostId}`,
          `  nats          ${settings.servers.join(', ')}${settings.user ? ` as ${settings.user}` : ''}`,
          ...(settings.insecure ? [`  nats          ${INSECURE_NATS}`] : []),
          `  docker        ${agent.engine.ok ? 'on' : 'not answering'}: ${agent.engine.reason}`,
          ...(listener ? [`  metrics       ${listener.url}`] : []),
          ...(missing.length > 0 ? [`  node          without ${missing.join(' ')}: large outputs cost more CPU in a long-lived agent (docs/cli.md)`] : []),
          '',
        ].join('\n'),
      );
      const graceMs = Number(flags.grace) * 1000;
      // Another agent of this host id that started first serves it too (two started together): it keeps the id.
      agent.onDisplaced((message) => {
        process.stderr.write(`Error: ${message}\n`);
        Promise.all([agent.close(0), listener?.close()]).finally(() => process.exit(outcomes.infrastructure_failure.exit));
      });
      onShutdownSignals(
        (signal) => {
          process.stderr.write(`[callwire] ${signal}: leaving the fleet; live calls have ${graceMs / 1000}s to finish\n`);
          Promise.all([agent.close(graceMs), listener?.close()]).then(
            () => process.exit(0),
            () => process.exit(1),
          );
        },
        () => process.exit(130),
      );
    });
}

/** `127.0.0.1:9464` or `[::1]:9464`. */
function hostPort(value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(value);
  const port = Number(m?.[3]);
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--metrics must be HOST:PORT, e.g. 127.0.0.1:9464, not "${value}"`);
  return { host: m[1] ?? m[2] ?? '', port };
}
