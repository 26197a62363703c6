/**
 * The NATS subjects of the fleet (docs/fleet.md "Subjects"): the one place they are
 * spelled. Every subject an agent publishes on starts with its own host's prefix, and
 * its NATS user may publish only there, so the host a message comes from is read off
 * its subject, never off its payload.
 */

/** A host id is one subject token: no dots, no wildcards, no spaces. */
export const HOST_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export function isHostId(id: string): boolean {
  return HOST_ID_PATTERN.test(id);
}

const PREFIX = 'callwire.host';

/** Gateway → agent `host`: the link messages of every gateway's connections to it. */
export const toHost = (host: string): string => `${PREFIX}.${host}.to`;
/** Agent `host` → gateway `gateway`. */
export const fromHost = (host: string, gateway: string): string => `${PREFIX}.${host}.from.${gateway}`;
/** Everything the agents send to gateway `gateway`: one subscription, however many calls. */
export const fromAnyHost = (gateway: string): string => `${PREFIX}.*.from.${gateway}`;
/** Agent `host`'s heartbeat and container table. */
export const beatOf = (host: string): string => `${PREFIX}.${host}.beat`;
export const ANY_BEAT = `${PREFIX}.*.beat`;
/** A gateway that starts asks every agent for its table now. */
export const HELLO = 'callwire.fleet.hello';

/** The host of a subject under `callwire.host.<host>.…`, or undefined. */
export function hostOfSubject(subject: string): string | undefined {
  const parts = subject.split('.');
  return parts[0] === 'callwire' && parts[1] === 'host' && parts[2] !== undefined && isHostId(parts[2]) ? parts[2] : undefined;
}
