import { HOST_ID_PATTERN } from './subjects.js';

/**
 * What a fleet call's resume token names (docs/fleet.md): the agent's call, which that
 * agent resumes for its caller's identity only. The token a gateway gives its caller
 * carries all of it, so any gateway can take the call up from the agent after the one
 * that relayed it is gone; the agent's own token, 144 random bits, is its secret.
 */
export interface FleetCall {
  readonly host: string;
  readonly operation: string;
  /** The call's id at the agent (the gateway's, not its caller's). */
  readonly callId: string;
  readonly agentToken: string;
}

const VERSION = 'fw1';
// The agent's token holds at least 128 random bits (RSM-1): 22 base64url characters.
const AGENT_TOKEN = /^[A-Za-z0-9_-]{22,64}$/;
const PART = /^[A-Za-z0-9_-]{1,128}$/;

export function fleetToken(call: FleetCall): string {
  return [VERSION, call.host, encode(call.operation), encode(call.callId), call.agentToken].join('.');
}

/** The call a token names, or undefined for one that is not a fleet token. */
export function parseFleetToken(token: string): FleetCall | undefined {
  const parts = token.split('.');
  if (parts.length !== 5) return undefined;
  const [version, host, operation, callId, agentToken] = parts as [string, string, string, string, string];
  if (version !== VERSION || !HOST_ID_PATTERN.test(host) || !PART.test(operation) || !PART.test(callId) || !AGENT_TOKEN.test(agentToken)) return undefined;
  return { host, operation: decode(operation), callId: decode(callId), agentToken };
}

const encode = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');
const decode = (part: string): string => Buffer.from(part, 'base64url').toString('utf8');
