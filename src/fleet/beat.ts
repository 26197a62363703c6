import { z } from 'zod';
import { MAX_TABLE_ENTRIES } from './beat-gate.js';

/** A container as the fleet routes to it: its id and names (without the engine's leading `/`). */
export const routedContainer = z.strictObject({ id: z.string().min(1).max(128), names: z.array(z.string().max(256)).max(16) });
export type RoutedContainer = z.output<typeof routedContainer>;

/**
 * An agent's heartbeat on `callwire.host.<host>.beat` (docs/fleet.md): every second,
 * with its container table when that changed or a gateway asked (`callwire.fleet.hello`).
 * `version` grows with every change of the table; `startedAt` tells a restarted agent.
 */
export const beatSchema = z.strictObject({
  startedAt: z.number(),
  version: z.number().int().min(0),
  engine: z.enum(['up', 'down']),
  containers: z.array(routedContainer).max(MAX_TABLE_ENTRIES).optional(),
});
export type Beat = z.output<typeof beatSchema>;

/** A gateway's ask: the tables of these hosts (all when absent), now. */
export const helloSchema = z.strictObject({ hosts: z.array(z.string()).max(10_000).optional() });

/** Agents beat this often; a host unheard for `DOWN_AFTER_BEATS` of them is down. */
export const BEAT_MS = 1000;
export const DOWN_AFTER_BEATS = 3;
