/**
 * The benchmark's server process: callwire (WebSocket and WebTransport), gRPC, a
 * raw ws server and a bare HTTP server, in one process apart from the clients. Prints its addresses as one
 * JSON line. Run with --expose-gc so memory readings are after a collection.
 */
import { server as callwire } from './built.js';
import { benchOperations } from './ops.js';
import { startGrpc, startRawHttp, startRawWs } from './peers.js';

// 50,000 idle subscriptions of the one local caller (bench/scenarios/memory.ts), past the default per-identity cap.
const server = await callwire.startServer({ port: 0, webTransportPort: 0, operations: benchOperations(), limits: { maxCallsInFlight: 4096, maxCallsPerIdentity: 100_000 }, docker: callwire.dockerEngine() });
const grpc = await startGrpc();
const raw = await startRawWs();
const rawHttp = await startRawHttp();
process.stdout.write(
  `${JSON.stringify({ wsUrl: server.wsUrl, wtUrl: server.wtUrl, certHash: server.certHash, grpcPort: grpc.port, rawPort: raw.port, rawHttpPort: rawHttp.port, docker: server.docker })}\n`,
);
process.on('SIGTERM', () => {
  void Promise.all([server.close(), grpc.stop(), raw.stop(), rawHttp.stop()]).then(() => process.exit(0));
});
