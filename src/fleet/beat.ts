import { z } from 'zod';
import { MAX_LABEL_BYTES_PER_CONTAINER, MAX_TABLE_ENTRIES, MAX_TABLE_PARTS } from './beat-gate.js';

/** The UTF-8 bytes of a container's labels, keys and values: what the label bounds weigh. */
export function labelBytes(labels: Readonly<Record<string, string>>): number {
  let bytes = 0;
  for (const key in labels) bytes += Buffer.byteLength(key) + Buffer.byteLength(labels[key] ?? '');
  return bytes;
}

/**
 * A container as the fleet routes to it: its id and names (without the engine's leading `/`),
 * and what a running container's list row holds (docs/fleet.md "Limits"), so a gateway can
 * list it without calling its host. Those are optional: an agent that omits them is listed
 * by a call; one whose labels pass the bounds omits them and says `labelsOmitted`.
 */
export const routedContainer = z.strictObject({
  id: z.string().min(1).max(128),
  names: z.array(z.string().max(256)).max(16),
  labels: z
    .record(z.string(), z.string())
    .refine((labels) => labelBytes(labels) <= MAX_LABEL_BYTES_PER_CONTAINER, `labels over ${MAX_LABEL_BYTES_PER_CONTAINER} bytes`)
    .optional(),
  labelsOmitted: z.literal(true).optional(),
  image: z.string().max(1024).optional(),
  state: z.string().max(32).optional(),
  status: z.string().max(256).optional(),
  created: z.number().optional(),
});
export type RoutedContainer = z.output<typeof routedContainer>;

/**
 * An agent's heartbeat on `callwire.host.<host>.beat` (docs/fleet.md): every second,
 * with its container table when that changed or a gateway asked (`callwire.fleet.hello`).
 * `version` grows with every change of the table; `startedAt` tells a restarted agent.
 * A table larger than one NATS message comes as `parts` beats, each with its `part`
 * (from 0) of the table of that `version`; without them the beat holds the whole table.
 * `withheld` says the agent has no table of that version to send: its engine did not
 * answer its list, or the table is over a table's bounds. Not having listed is not having
 * nothing: the gateway keeps the names it holds for the host, and does not ask.
 * `pid` and `hostname` say which process the agent is, for a second agent of the same
 * host id to name it (src/fleet/host-claim.ts), and a gateway that hears two.
 */
export const beatSchema = z.strictObject({
  startedAt: z.number(),
  version: z.number().int().min(0),
  engine: z.enum(['up', 'down']),
  containers: z.array(routedContainer).max(MAX_TABLE_ENTRIES).optional(),
  part: z.number().int().min(0).max(MAX_TABLE_PARTS - 1).optional(),
  parts: z.number().int().min(1).max(MAX_TABLE_PARTS).optional(),
  withheld: z.enum(['engine-down', 'too-large']).optional(),
  pid: z.number().int().min(0).optional(),
  hostname: z.string().max(255).optional(),
});
export type Beat = z.output<typeof beatSchema>;

/** A gateway's ask: the tables of these hosts (all when absent), now. */
export const helloSchema = z.strictObject({ hosts: z.array(z.string()).max(10_000).optional() });

/** Agents beat this often; a host unheard for `DOWN_AFTER_BEATS` of them is down. */
export const BEAT_MS = 1000;
export const DOWN_AFTER_BEATS = 3;
