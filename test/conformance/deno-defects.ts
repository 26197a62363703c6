/**
 * The one list of Deno's pinned defects that keep conformance scenarios from passing
 * over HTTP/3 (docs/http3.md "Upstream defects" names each by its id here). A run over
 * HTTP/3 accepts a scenario that does not pass only when a defect below names that
 * scenario, for that client, with that outcome and message; anything else not passing
 * fails the test, and a defect that no longer shows fails it too: unpin it.
 */

/** Who runs the scenarios: the Node runner through the Deno client edge, or Deno's own WebTransport client. */
export type Http3Client = 'node-through-edge' | 'deno-webtransport';

export interface DenoDefect {
  readonly id: string;
  /** What is wrong, as docs/http3.md says it. */
  readonly what: string;
  /** The clients it shows with. */
  readonly clients: readonly Http3Client[];
  /** The scenarios it keeps from passing. */
  readonly scenarios: readonly string[];
  /** How they end while it shows, and the message that says it is this defect. */
  readonly status: 'skip' | 'fail';
  readonly message: RegExp;
}

export const DENO_DEFECTS: readonly DenoDefect[] = [
  {
    id: 'deno-quic-no-reset',
    what: "Deno 2.9.6's QUIC API cannot reset a stream: a caller over HTTP/3 through Deno cannot reset its side",
    clients: ['node-through-edge', 'deno-webtransport'],
    scenarios: ['webtransport-002'],
    status: 'skip',
    message: /cannot: Deno's QUIC API has no reset/,
  },
  {
    id: 'deno-webtransport-no-fin',
    what: "Deno 2.9.6's WebTransport client never sends a stream's FIN: closing its writable does nothing",
    clients: ['deno-webtransport'],
    scenarios: ['webtransport-005', 'webtransport-026'],
    status: 'fail',
    message: /nothing came|stayed open/,
  },
];

/** The defect that explains `id` not passing for `client`, if one does. */
export function pinnedDefect(client: Http3Client, id: string): DenoDefect | undefined {
  return DENO_DEFECTS.find((d) => d.clients.includes(client) && d.scenarios.includes(id));
}

/**
 * Of a run's results, those that did not pass, that `accepted` does not take (the other
 * transport's skips), and that no pinned defect of `client` explains by id, outcome and
 * message; and the pinned scenarios that passed after all (unpin them). No client: no
 * defect is pinned (a run that does not go through Deno).
 */
export function unexplained(client: Http3Client | undefined, results: readonly { id: string; status: string; message: string }[], accepted: (r: { status: string; message: string }) => boolean): { unexplained: unknown[]; unpinned: string[] } {
  const out: unknown[] = [];
  for (const r of results) {
    if (r.status === 'pass' || accepted(r)) continue;
    const defect = client && pinnedDefect(client, r.id);
    if (defect && defect.status === r.status && defect.message.test(r.message)) continue;
    out.push(r);
  }
  const pinned = DENO_DEFECTS.filter((d) => client !== undefined && d.clients.includes(client)).flatMap((d) => d.scenarios);
  return { unexplained: out, unpinned: results.filter((r) => pinned.includes(r.id) && r.status === 'pass').map((r) => r.id) };
}
