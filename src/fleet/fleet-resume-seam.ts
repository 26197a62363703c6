import type { CallOptions, Client } from '../client/index.js';
import type { CallContext, Identity, ResumeSeam, SeamStream } from '../dispatcher/index.js';
import { LINK_GRACE_MS, releasing, type Lease } from './fleet-clients.js';
import { fleetToken, parseFleetToken } from './fleet-token.js';
import { RelayAcks } from './relay-acks.js';

/** Everything may be acknowledged: the caller never will (its call is not resumable, or it never acknowledges). */
const UNLIMITED = Number.MAX_SAFE_INTEGER;

/** A gateway's call id at an agent: unique on its connection without a counter shared between gateways. */
function agentCallId(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(12))).toString('base64url');
}

/**
 * A stream relayed from an agent (spec/PROTOCOL.md §4.9, docs/fleet.md): resumable at the
 * caller with a token naming the agent's own call, so any gateway can take it up there;
 * the agent is told the caller has an item only once the caller says so, so it keeps
 * what the caller may need from another gateway. Item n of the agent's is item n of the
 * caller's: each one the SDK yields becomes one of the call's.
 */
export function relayStream(client: Client, host: string, operation: string, input: unknown, ctx: CallContext, options: CallOptions): AsyncIterable<unknown> {
  const relay = ctx.resumption;
  if (!relay) return client.iterate(operation, input, options);
  const acks = new RelayAcks();
  relay.onAcknowledged((seq) => acks.raise(seq));
  relay.onForgotten(() => acks.release());
  const callId = agentCallId();
  let offered = false;
  const offer = (token: string | null): void => {
    if (offered) return;
    offered = true;
    if (relay.offer(token)) return;
    acks.raise(UNLIMITED);
    acks.release();
  };
  return client.iterate(operation, input, {
    ...options,
    id: callId,
    acknowledgements: acks,
    onResumable: (agentToken) => offer(fleetToken({ host, operation, callId, agentToken })),
    onInputAcknowledged: (seq) => relay.upstreamHasInput(seq),
    onAdmitted: () => offer(null),
  });
}

/**
 * The fleet's side of a gateway's resumption seam (§4.9, docs/fleet.md): a fleet call
 * another gateway relayed is taken up from its agent. The token names the host, the
 * operation and the agent's call; the agent resumes it for the caller's identity only,
 * and answers every other caller NOT_FOUND, which is what the caller hears.
 */
export class FleetResumeSeam implements ResumeSeam {
  constructor(private readonly leaseFor: (host: string, caller: { identity: Identity | null }) => Lease | undefined) {}

  adopt(token: string, identity: Identity | null): SeamStream | undefined {
    const call = parseFleetToken(token);
    const lease = call && this.leaseFor(call.host, { identity });
    if (!call || !lease) return undefined;
    return {
      operation: call.operation,
      graceMs: LINK_GRACE_MS,
      source: (seq, ctx) => {
        const acks = new RelayAcks(seq);
        ctx.resumption?.onAcknowledged((acked) => acks.raise(acked));
        ctx.resumption?.onForgotten(() => acks.release());
        return releasing(
          lease.client.takeUp(
            { id: call.callId, token: call.agentToken, seq, graceMs: LINK_GRACE_MS },
            {
              signal: ctx.signal,
              acknowledgements: acks,
              onResumed: (inputSeq) => ctx.resumption?.resumed(inputSeq),
              onInputAcknowledged: (inputSeq) => ctx.resumption?.upstreamHasInput(inputSeq),
              ...(ctx.input ? { input: ctx.input } : {}),
            },
          ),
          lease.release,
        );
      },
    };
  }
}
