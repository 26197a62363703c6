import { probeHandshake } from '../raw-connection.js';
import { silentSocket as openSilentSocket } from '../silent-socket.js';
import { ScenarioFailure } from '../verdict.js';
import { DEFAULT_TIMEOUT_MS, type Handler } from './handler.js';

/** Steps that reach the server below the protocol: a WebSocket upgrade, a bare TCP connection. */

export const handshake: Handler<'handshake'> = async (step, run) => {
  const got = await probeHandshake(run.options.url, step.handshake.subprotocols, step.handshake.headers);
  if (step.handshake.expectStatus !== undefined && got.status !== step.handshake.expectStatus) {
    throw new ScenarioFailure(`expected the upgrade to be refused with ${step.handshake.expectStatus}, got ${JSON.stringify(got)}`);
  }
  if (step.handshake.expectProtocol !== undefined && got.protocol !== step.handshake.expectProtocol) {
    throw new ScenarioFailure(`expected subprotocol "${step.handshake.expectProtocol}", got ${JSON.stringify(got)}`);
  }
};

export const silentSocket: Handler<'silentSocket'> = async (step, run) => {
  const wait = run.options.features.limits.handshakeTimeoutMs + (step.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const got = await openSilentSocket(run.options.url, step.silentSocket.send, wait);
  if (got.error !== undefined) throw new ScenarioFailure(`could not open a TCP connection to the server: ${got.error}`);
  if (!got.closed) throw new ScenarioFailure(`a connection that completed no request stayed open ${wait} ms`);
  if (got.received > 0 && step.silentSocket.send === undefined) throw new ScenarioFailure(`the callee sent ${got.received} bytes to a connection that sent nothing`);
};
