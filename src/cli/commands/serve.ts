import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { RunningServer } from '../../server/index.js';
import type { LogLevel } from '../logger.js';
import { gatewayOptions, gatewaySettings, INSECURE_NATS, natsOptions, type GatewayFlags } from '../nats-flags.js';
import { missingLongLivedFlags } from '../node-flags.js';
import { serveOptions } from '../serve-options.js';
import { onShutdownSignals } from '../signals.js';

export interface ServeFlags extends GatewayFlags {
  host: string;
  port: string;
  wtPort: string;
  webtransport: boolean;
  cert?: string;
  key?: string;
  tokens?: string;
  grace: string;
  logLevel: LogLevel;
  conformance?: boolean;
  maxCallsInFlight?: string;
  maxInputBytes?: string;
  maxCallsPerIdentity?: string;
  maxExecSessionsPerIdentity?: string;
  maxOutboundBytesPerIdentity?: string;
  maxConnections?: string;
  handshakeTimeout: string;
  allowOrigin: string[];
  allowHost: string[];
  keepalive: string;
  maxResume: string;
  http3: boolean;
  socket?: string;
  audit?: string;
  record?: string;
  recordMaxBytes?: string;
  recordReserveBytes?: string;
  recordStrict?: boolean;
  metrics: boolean;
}

export function registerServe(program: Command): void {
  const command = program
    .command('serve')
    .description('run the server: WebSocket and WebTransport, discovery, and Docker operations when an engine is reachable')
    .option('--host <address>', 'address to listen on; anything but loopback needs tokens', '127.0.0.1')
    .option('--port <n>', 'WebSocket port (0: any free port)', '7070')
    .option('--wt-port <n>', 'WebTransport port (0: any free port)', '7071')
    .option('--no-webtransport', 'serve WebSocket only')
    .option('--no-http3', 'WebTransport over HTTP/2 only: no HTTP/3 edge')
    .option('--socket <path>', 'also serve the WebSocket and HTTP calls on this unix socket (mode 0600): callers on this machine skip loopback TCP')
    .option('--cert <file>', 'PEM certificate (with --key): wss:// and WebTransport use it')
    .option('--key <file>', 'PEM private key for --cert')
    .option('--tokens <file>', 'tokens file {"tokens":[{"token","subject","scopes"}]} (or CALLWIRE_TOKENS / CALLWIRE_TOKENS_FILE)')
    .option('--grace <seconds>', 'on SIGINT/SIGTERM, how long live calls may finish before they are aborted', '10')
    .option('--log-level <level>', 'debug | info | warn | error', 'info')
    .option('--conformance', 'also offer the conformance/* operations the conformance suite drives')
    .option('--max-calls-in-flight <n>', 'live calls per connection (spec §9; default 4096)')
    .option('--max-input-bytes <n>', 'largest call.requested frame in bytes (spec §9; default 4 MiB)')
    .option('--max-calls-per-identity <n>', 'live calls of one identity over all its connections (spec §9; default 16384)')
    .option('--max-exec-sessions-per-identity <n>', 'live execs of one identity (spec §9; default 256)')
    .option('--max-outbound-bytes-per-identity <n>', 'output one identity\'s readers have not taken, all its connections together: at it a new output ends its call SLOW_CONSUMER, and from half of it waiting for sockets its streams wait (spec §8; default 256 MiB)')
    .option('--max-connections <n>', 'open connections on all listeners together; more are closed unread (spec §9; default 10000)')
    .option('--handshake-timeout <seconds>', 'a connection that completes no request or upgrade this long after it opens is closed (0: never)', '10')
    .option('--allow-origin <origin>', 'a web page origin allowed to connect besides the server\'s own, e.g. https://app.example (repeatable; "*" only with tokens)', collect, [])
    .option('--allow-host <name>', 'a Host name accepted besides loopback names while listening on loopback (repeatable)', collect, [])
    .option('--max-resume <seconds>', 'longest a resumable call (exec, subscribe) is kept for its caller after its connection is lost (0: calls end with their connection)', '60')
    .option('--audit <file>', 'append one JSON line per call (who, what, container, command, outcome, exit code, bytes, duration; never a token) to this file, mode 0600; "-": stdout, and the banner goes to stderr')
    .option('--record <dir>', 'record every exec with a terminal (exec -it) as an asciicast v2 file in this directory (mode 0700), for asciinema play')
    .option('--record-max-bytes <n>', 'largest a recording grows; at the cap it ends with an event that says so, and the session goes on unrecorded (default 64 MiB)')
    .option('--record-reserve-bytes <n>', 'free space kept for the audit log on the recordings\' disk: below it recordings stop and none starts (default 64 MiB)')
    .option('--record-strict', 'end a terminal session whose recording cannot go on (its cap, the reserve, a failed disk) instead of letting it run unrecorded')
    .option('--no-metrics', 'do not serve GET /metrics (Prometheus text) on the HTTP port; with tokens it needs the scope metrics:read')
    .option('--keepalive <seconds>', 'WebSocket ping interval; a peer silent for a whole interval after a ping is dropped and its calls aborted (0: off)', '30');
  gatewayOptions(natsOptions(command, false))
    .action(async (flags: ServeFlags) => {
      // Loaded here: the server's dependencies (Docker, TLS, transports) would slow every other command's start.
      const { dockerEngine, loadTokens, startServer } = await import('../../server/index.js');
      const tokens = loadTokens({ file: flags.tokens ?? process.env['CALLWIRE_TOKENS_FILE'], json: process.env['CALLWIRE_TOKENS'] });
      if ((flags.cert === undefined) !== (flags.key === undefined)) throw new Error('--cert and --key go together');
      const fleet = await gatewaySettings(flags);
      const tls = flags.cert && flags.key ? { certPem: readFileSync(flags.cert, 'utf8'), keyPem: readFileSync(flags.key, 'utf8') } : undefined;
      const server = await startServer(serveOptions(flags, { tokens, tls, fleet, docker: dockerEngine() }));
      // stdout that carries the audit log carries nothing else.
      printBanner(server, tokens.length, flags, flags.audit === '-' ? process.stderr : process.stdout);
      handleSignals(server, Number(flags.grace) * 1000);
    });
}

function collect(value: string, all: string[]): string[] {
  return [...all, value];
}

function printBanner(server: RunningServer, tokenCount: number, flags: ServeFlags, to: NodeJS.WritableStream): void {
  // Written at once, so a reader of the pipe does not see half a banner.
  const lines: string[] = [];
  const out = (line: string): number => lines.push(line);
  out('callwire is serving');
  out(`  WebSocket     ${server.wsUrl}`);
  out(`  Lab           http://${new URL(server.wsUrl).host}/  (operations and exec in a browser)`);
  if (server.unixUrl) out(`  unix socket   ${server.unixUrl}  (this machine only, mode 0600)`);
  if (server.wtUrl) {
    out(`  WebTransport  ${server.wtUrl}  (HTTP/2${server.http3 ? ` and HTTP/3 via ${server.http3Reason}` : `; HTTP/3 off: ${flags.http3 ? server.http3Reason : 'turned off (--no-http3)'}`})`);
    out(`  certificate   sha256 ${server.certHash}${server.certNotAfter ? `  (self-signed, valid until ${server.certNotAfter.toISOString()})` : ''}`);
  }
  out(`  auth          ${tokenCount === 0 ? 'none: loopback only, local callers have full access' : `${tokenCount} token(s)`}`);
  out(`  browsers      ${server.allowedOrigins.length === 0 ? 'pages of this server only' : `this server's pages and ${server.allowedOrigins.join(', ')}`}`);
  if (server.fleet) out(`  fleet         gateway ${server.fleet.id} over NATS; hosts up: ${server.fleet.hosts().filter((h) => h.state === 'up').map((h) => h.id).join(', ') || 'none yet'}${flags.pin.length > 0 ? `; pinned: ${flags.pin.join(' ')}` : ''}`);
  if (server.fleet && flags.natsInsecure) out(`  nats          ${INSECURE_NATS}`);
  out(`  docker        ${server.docker.on ? `on: ${server.docker.reason}` : `off: ${server.docker.reason} (set DOCKER_HOST, or run scripts/docker-engine.sh up)`}`);
  if (flags.metrics) out(`  metrics       ${server.wsUrl.startsWith('wss:') ? 'https' : 'http'}://${new URL(server.wsUrl).host}/metrics  (${tokenCount === 0 ? 'Prometheus text' : 'needs a token with the scope metrics:read'})`);
  if (flags.audit) out(`  audit         ${flags.audit === '-' ? 'stdout' : flags.audit}  (one JSON line per call)`);
  if (flags.record) out(`  recording     ${flags.record}  (terminal sessions as asciicast v2${flags.recordStrict ? '; a session whose recording stops is ended' : ''})`);
  out(`  operations    ${server.registry.list().map((op) => op.name).join(', ')}`);
  const missing = missingLongLivedFlags();
  if (missing.length > 0) out(`  node          without ${missing.join(' ')}: large outputs cost more CPU in a long-lived server (docs/cli.md)`);
  // npx finds the CLI in a clone and in a project that depends on callwire; a bare `callwire` only when installed globally.
  out('connect:');
  out(`  npx callwire ops --url ${server.wsUrl}`);
  if (server.wtUrl) out(`  npx callwire ops --url ${server.wtUrl} --cert-hash ${server.certHash}`);
  to.write(`${lines.join('\n')}\n`);
}

function handleSignals(server: RunningServer, graceMs: number): void {
  let exitCode = 0;
  onShutdownSignals(
    (signal) => {
      process.stderr.write(`[callwire] ${signal}: no new calls; live calls have ${graceMs / 1000}s to finish\n`);
      server.close(graceMs).then(
        () => process.exit(exitCode),
        (error: unknown) => {
          process.stderr.write(`Error: shutdown failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
    },
    (signal) => {
      process.stderr.write(`[callwire] ${signal} again: exiting now\n`);
      exitCode = 130;
      // Said to the clients (their calls end UNAVAILABLE, each connection closes 1001), or they would
      // find a broken connection and wait out their resume grace against a server that is gone.
      void server.close(0);
      setTimeout(() => process.exit(130), 2000).unref();
    },
  );
}
