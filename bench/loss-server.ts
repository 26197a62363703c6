/**
 * The loss measurement's server (bench/loss.ts), run inside its network namespace: the
 * test operations (test/bytes sends a known pattern), every carrier, and a token, since
 * it listens on an address that is not loopback. Prints its addresses as one JSON line.
 */
import { startServer } from '../src/server/index.js';
import { Probe, sampleOperations } from '../test/support/sample-ops.js';

const [host, token] = process.argv.slice(2);
const server = await startServer({
  host: host!,
  port: 0,
  webTransportPort: 0,
  docker: false,
  operations: sampleOperations(new Probe()),
  tokens: [{ token: token!, subject: 'loss', scopes: ['*'] }],
  keepaliveMs: 0,
});
process.stdout.write(`${JSON.stringify({ wsUrl: server.wsUrl, wtUrl: server.wtUrl, certHash: server.certHash, http3: server.http3 })}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
