/**
 * The bench fleet's gateway process: `callwire serve --nats` as a library (bench/fleet.ts
 * starts it), with the bench's own operations beside the fleet's, so that its memory
 * can be read after a collection (`bench/memory`). Prints `{ wsUrl }` as one JSON line.
 * Run with --expose-gc.
 */
import type { NatsSettings } from '../src/fleet/index.js';
import { server as callwire } from './built.js';
import { benchOperations } from './ops.js';

const fleet = JSON.parse(process.env['CALLWIRE_BENCH_NATS'] ?? 'null') as NatsSettings | null;
if (!fleet) throw new Error('CALLWIRE_BENCH_NATS names no NATS cluster');
// The live calls of bench/scenarios/fleet-subscriptions.ts, past the default per-identity cap.
const server = await callwire.startServer({ port: 0, webTransportPort: false, operations: benchOperations(), limits: { maxCallsInFlight: 4096, maxCallsPerIdentity: 100_000 }, fleet });
process.stdout.write(`${JSON.stringify({ wsUrl: server.wsUrl })}\n`);
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});
