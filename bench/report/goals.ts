/**
 * The performance goals (issue 25's table) read off a run: each goal's ratio for this
 * build and, with `--baseline`, for the baseline build measured in the same rounds.
 */
import { BASELINE, CALLWIRE_CLI, DOCKER, FORMAT_CEILING, GRPC, HTTP, WEBSOCKET, WEBTRANSPORT_H2, WEBTRANSPORT_H3 } from '../names.js';
import type { Comparison, Row } from '../rows.js';
import { LARGE_ITEMS, SMALL_ITEMS } from '../scenarios/streaming.js';
import { Lookup } from './lookup.js';
import { times } from './table.js';

export interface Goal {
  readonly label: string;
  readonly group: string;
  readonly metric: string;
  readonly subject: string;
  readonly peer: string;
  /** The ratio to reach: at least this, or at most for a latency. */
  readonly target: number;
  readonly atMost?: boolean;
}

const CALLWIRE = [WEBSOCKET, WEBTRANSPORT_H2, WEBTRANSPORT_H3, HTTP, CALLWIRE_CLI];

export const GOALS: readonly Goal[] = [
  { label: 'WebSocket unary @64 / format ceiling', group: 'unary', metric: 'calls/s @64 in flight', subject: WEBSOCKET, peer: FORMAT_CEILING, target: 0.7 },
  { label: 'WebSocket streaming 100 B / format ceiling', group: 'streaming', metric: SMALL_ITEMS.label, subject: WEBSOCKET, peer: FORMAT_CEILING, target: 0.8 },
  { label: 'WebSocket unary @1 / format ceiling', group: 'unary', metric: 'calls/s @1 in flight', subject: WEBSOCKET, peer: FORMAT_CEILING, target: 0.9 },
  { label: 'WebTransport HTTP/3 unary @1 / grpc-js', group: 'unary', metric: 'calls/s @1 in flight', subject: WEBTRANSPORT_H3, peer: GRPC, target: 1 },
  { label: 'WebTransport HTTP/2 unary @1 / grpc-js', group: 'unary', metric: 'calls/s @1 in flight', subject: WEBTRANSPORT_H2, peer: GRPC, target: 1.5 },
  { label: 'WebTransport HTTP/2 64 KiB streaming / grpc-js', group: 'streaming', metric: LARGE_ITEMS.label, subject: WEBTRANSPORT_H2, peer: GRPC, target: 1 },
  { label: 'WebTransport HTTP/3 64 KiB streaming / grpc-js', group: 'streaming', metric: LARGE_ITEMS.label, subject: WEBTRANSPORT_H3, peer: GRPC, target: 1 },
  { label: 'exec `dd` 512 MiB, SDK / `docker exec`', group: 'exec', metric: 'dd 512 MiB of output', subject: WEBSOCKET, peer: DOCKER, target: 0.8 },
  { label: 'exec -it keystroke echo / `docker exec -it` (lower is better)', group: 'exec', metric: 'keystroke echo, tty (median)', subject: CALLWIRE_CLI, peer: DOCKER, target: 1.5, atMost: true },
  { label: '10,000 subscriptions / 1 subscription, items/s', group: 'scaling', metric: 'items/s, 100 B items, 10,000 concurrent subscription(s)', subject: WEBSOCKET, peer: '1 subscription', target: 0.9 },
  { label: 'HTTP POST unary @1 / WebSocket', group: 'unary', metric: 'calls/s @1 in flight', subject: HTTP, peer: WEBSOCKET, target: 0.6 },
];

export interface GoalReading {
  readonly goal: Goal;
  readonly now?: Comparison;
  /** The baseline build's same ratio (its subject, and its peer when the peer is a callwire subject too). */
  readonly before?: Comparison;
}

export const met = (goal: Goal, c: Comparison): boolean => (goal.atMost ? c.ratio <= goal.target : c.ratio >= goal.target);

export function readGoals(rows: readonly Row[]): GoalReading[] {
  const l = new Lookup(rows);
  return GOALS.map((goal) => {
    const basePeer = CALLWIRE.includes(goal.peer) ? `${goal.peer}${BASELINE}` : goal.peer;
    const now = l.vs(goal.group, goal.metric, goal.subject, goal.peer);
    const before = l.vs(goal.group, goal.metric, `${goal.subject}${BASELINE}`, basePeer);
    return { goal, ...(now ? { now } : {}), ...(before ? { before } : {}) };
  });
}

/** The goals table; empty when the run measured none of them. */
export function goalsTable(rows: readonly Row[]): string[] {
  const readings = readGoals(rows).filter((r) => r.now);
  if (!readings.length) return [];
  const cell = (c: Comparison | undefined): string => (c ? times(c) : '–');
  return [
    '| goal: a ratio of medians from the same rounds | before (the baseline build) | this build | goal | met |',
    '|---|---:|---:|---:|---|',
    ...readings.map(({ goal, now, before }) => `| ${goal.label} | ${cell(before)} | ${cell(now)} | ${goal.atMost ? '≤' : '≥'} ${goal.target}× | ${met(goal, now!) ? 'yes' : 'no'} |`),
  ];
}
