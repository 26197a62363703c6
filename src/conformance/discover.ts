import { randomUUID } from 'node:crypto';
import { serverInfo, serverLimits, type OperationSummary } from '../contracts/index.js';
import type { CodecName } from '../protocol/index.js';
import type { WtCarrierChoice } from '../webtransport/index.js';
import { rawConnect } from './raw-connection.js';
import type { Features } from './scenario.js';

export interface DiscoverOptions {
  readonly url: string;
  readonly codec: CodecName;
  readonly token?: string | undefined;
  readonly certHash?: string | undefined;
  readonly transport?: WtCarrierChoice | undefined;
}

/**
 * What discovery reads of services/info: its contract, except that a server may leave
 * out the limits the features file's values stand in for.
 */
const announcedInfo = serverInfo.extend({
  limits: serverLimits.partial().required({ maxInputBytes: true, maxCallsInFlight: true, maxFrameBytes: true, keepaliveMs: true }),
});

/**
 * What the server under test offers, asked of the server itself (services/info and
 * services/list) rather than assumed, so a scenario that does not apply is skipped
 * with its reason instead of blaming a correct server. A server without
 * services/info keeps the features file's claims (`base`).
 */
export async function discoverFeatures(options: DiscoverOptions, base: Features): Promise<{ features: Features; notes: string[] }> {
  const anonymous = await ask(options, 'services/info', undefined);
  if (!anonymous.ok) return { features: base, notes: [`services/info: ${anonymous.error}; using the features file`] };
  const info = announcedInfo.safeParse(anonymous.value);
  if (!info.success) return { features: base, notes: [`services/info answered outside its contract (${info.error.issues[0]?.path.join('.')}: ${info.error.issues[0]?.message}); using the features file`] };
  const list = await ask(options, 'services/list', options.token);
  const names = new Set(list.ok ? (list.value as { operations: Pick<OperationSummary, 'name'>[] }).operations.map((o) => o.name) : []);
  const { limits, identity } = info.data;
  const features: Features = {
    ...base,
    // Tokens configured: a caller without one is anonymous. Without tokens, local callers hold `*`.
    auth: identity === null,
    docker: names.has('docker/container/exec') ? base.docker || { image: 'callwire-test:busybox' } : false,
    // The scenarios' probe operations come as a set (serve --conformance): one stands for all.
    probes: names.has('conformance/echo'),
    limits: {
      maxInputBytes: limits.maxInputBytes,
      maxCallsInFlight: limits.maxCallsInFlight,
      maxFrameBytes: limits.maxFrameBytes,
      // A server that does not announce it is held to the features file's (the protocol's default).
      maxNestingDepth: limits.maxNestingDepth ?? base.limits.maxNestingDepth,
      keepaliveMs: limits.keepaliveMs,
      maxCallsPerIdentity: limits.maxCallsPerIdentity ?? 0,
      handshakeTimeoutMs: limits.handshakeTimeoutMs ?? 0,
    },
  };
  const notes = [
    `auth: ${features.auth ? 'tokens configured (callers without one are anonymous)' : `no tokens: callers are "${identity?.subject ?? '?'}" with ${identity?.scopes.join(' ') ?? 'no scopes'}`}`,
    `docker: ${features.docker ? 'docker/container/exec offered' : 'no docker/container/exec'}`,
    `probes: ${features.probes ? 'the probe operations conformance/* offered' : 'no probe operations conformance/* (callwire serve --conformance serves them): the scenarios that drive them are not applicable'}`,
    `limits: maxCallsInFlight ${limits.maxCallsInFlight}, maxInputBytes ${limits.maxInputBytes}, maxFrameBytes ${limits.maxFrameBytes}, maxNestingDepth ${features.limits.maxNestingDepth}, keepalive ${limits.keepaliveMs} ms, maxCallsPerIdentity ${limits.maxCallsPerIdentity ?? '?'}, handshakeTimeout ${limits.handshakeTimeoutMs ?? '?'} ms`,
  ];
  return { features, notes };
}

async function ask(options: DiscoverOptions, operationId: string, token: string | undefined): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {
  const c = await rawConnect(options.url, { codec: options.codec, token, certHash: options.certHash, transport: options.transport });
  try {
    const id = `discover-${randomUUID()}`;
    c.sendValue({ type: 'call.requested', id, payload: { operationId, input: null } });
    const event = await c.events.take((e) => e.kind === 'close' || (e.kind === 'frame' && e.id === id), 5000);
    const frame = event?.kind === 'frame' ? (event.value as { type?: string; payload?: { output?: unknown; code?: string; message?: string } }) : undefined;
    if (frame?.type === 'call.responded') return { ok: true, value: frame.payload?.output };
    return { ok: false, error: frame?.payload?.code ? `${frame.payload.code} ${frame.payload.message ?? ''}`.trim() : 'no answer' };
  } finally {
    await c.close();
  }
}
