import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BASELINE, CALLWIRE_CLI, DOCKER, FORMAT_CEILING, HTTP, WEBSOCKET, WEBSOCKET_RESUMABLE } from '../../bench/names.js';
import { writeResultsPage } from '../../bench/report.js';
import { baselineTable } from '../../bench/report/baseline.js';
import { GOALS, goalsTable, met } from '../../bench/report/goals.js';
import { movedRatios, notARepeat, repeatSection } from '../../bench/report/repeat.js';
import { resultsPage } from '../../bench/report/page.js';
import type { Results } from '../../bench/results.js';
import type { Row } from '../../bench/rows.js';
import { ATTACHED, FRESH_CALL, FRESH_CALL_METRIC, perResumableCall, SINCE_CUT_END, SINCE_RECONNECT } from '../../bench/scenarios/resume-metrics.js';

const FIXTURES = 'test/bench/fixtures';

/** bench/RESULTS.md as `npx tsx bench/report.ts` makes it, from the fixtures. */
function page(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-report-'));
  const target = join(dir, 'RESULTS.md');
  try {
    writeResultsPage(`${FIXTURES}/results.json`, target, `${FIXTURES}/loss.json`);
    return readFileSync(target, 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('bench/RESULTS.md from a results file', () => {
  it('says what made it: the command, the date, the machine, the rounds, what was skipped', () => {
    const text = page();
    expect(text).toContain('Measured with `npm run bench` on 2026-01-02 03:04 UTC: 2 × Test CPU, 8 GiB, Node v20.0.0, Linux test, Docker Engine 27.0');
    expect(text).toContain('5 interleaved rounds; the run took 42 s');
    expect(text).toContain('Not measured in this run: keystroke (no tty here).');
  });

  it('has a table per group, each row its median, its runs\' spread and every ratio to a peer', () => {
    const text = page();
    expect(text).toContain('### unary');
    expect(text).toContain('### exec');
    expect(text).toContain('| calls/s @1 in flight | callwire WebSocket | 7,919 (7,634–8,117) calls/s | 3.17× (2.95–4.09) grpc-js; 0.86× (0.80–0.92) format ceiling |');
    expect(text).toContain('| calls/s @1 in flight | callwire HTTP | 1,949 (1,261–2,021) calls/s | 0.26× (0.17–0.29) callwire WebSocket |');
    expect(text).toContain('| p50 @1 | callwire HTTP | 0.46 (0.41–0.64) ms |  |');
  });

  it('writes its sentences from the figures, and leaves out a sentence whose figures were not measured', () => {
    const text = page();
    expect(text).toContain("Plain HTTP, one POST per call: 0.26× (0.17–0.29) the WebSocket's unary rate at one call in flight, 0.03× (0.03–0.03) at 64.");
    expect(text).toContain("Exec `dd 512 MiB` through the SDK: 300 MB/s, 0.62× (0.55–0.86) docker exec's rate.");
    // No streaming, growth, scaling or memory rows in the fixture: no sentence or table about them.
    expect(text).not.toContain('Streaming 100 B items');
    expect(text).not.toContain('## Cost growth');
    expect(text).not.toMatch(/undefined|NaN/);
  });

  it('carries the loss table and what each carrier kept, from loss.json', () => {
    const text = page();
    expect(text).toContain('| 1% | WebSocket | 50.0 | yes | 300 | 206.7 |');
    expect(text).toContain('Every byte arrived on every carrier at every loss rate.');
    expect(text).toContain('WebSocket at 1% loss kept 50% of its lossless subscription rate, and 10% of its rate of calls one after another.');
  });
});

describe('the resumable calls\' rows in bench/RESULTS.md', () => {
  const row = (group: string, metric: string, subject: string, unit: string, value: number, vs: Row['vs'] = []): Row => ({ group, metric, subject, unit, value, vs });
  const rows: Row[] = [
    row('streaming', '100 B items', WEBSOCKET_RESUMABLE, 'items/s', 400_000, [{ peer: WEBSOCKET, peerValue: 500_000, ratio: 0.8, ratioMin: 0.7, ratioMax: 0.9 }]),
    row('streaming', '64 KiB items', WEBSOCKET_RESUMABLE, 'MB/s', 524.288, [{ peer: WEBSOCKET, peerValue: 655.36, ratio: 1.25, ratioMin: 1.25, ratioMax: 1.25 }]),
    { ...row('resume', `${SINCE_CUT_END} (3 s cut, 100 B items)`, WEBSOCKET_RESUMABLE, 'ms', 750, [{ peer: FRESH_CALL, peerValue: 10, ratio: 75 }]), min: 600, max: 900 },
    row('resume', `${SINCE_RECONNECT} (3 s cut, 100 B items)`, WEBSOCKET_RESUMABLE, 'ms', 20, [{ peer: FRESH_CALL, peerValue: 10, ratio: 2, ratioMin: 1.5, ratioMax: 2.5 }]),
    row('resume', FRESH_CALL_METRIC, WEBSOCKET, 'ms', 10),
    row('memory', perResumableCall('heap', 'detached'), WEBSOCKET_RESUMABLE, 'KiB', 2.5, [{ peer: ATTACHED, peerValue: 2, ratio: 1.25 }]),
    row('memory', perResumableCall('replay kept', 'detached'), WEBSOCKET_RESUMABLE, 'B', 163, [{ peer: ATTACHED, peerValue: 163, ratio: 1 }]),
  ];
  const results = (of: readonly Row[]): Results => ({ date: '2026-01-02T03:04:05.000Z', command: 'npm run bench', machine: { cpu: 'c', cores: 2, memoryGiB: 8, node: 'v20', platform: 'Linux' }, runs: 5, seconds: 1, skipped: [], rows: of });

  it('says what the sequence costs per item, how soon a cut call is back against a fresh call, and what a detached call holds', () => {
    const text = resultsPage(results(rows), 'r.json');
    expect(text).toContain('## Resumable calls');
    // 100 B: 2 µs per plain item, 0.8× the rate: 0.5 µs more. 64 KiB: 100 µs per plain item, 1.25× the rate: 20 µs less.
    expect(text).toContain("100 B items at 0.80× (0.70–0.90) the plain stream's rate (+0.50 µs per item); 64 KiB items at 1.25× the plain stream's rate (−20.00 µs per item).");
    expect(text).toContain('the first item from after the cut reached the consumer 750 (600–900) ms after the relay took connections again');
    expect(text).toContain("From the relay taking the client's new connection it took 20 ms: 2.00× (1.50–2.50) a fresh connect and first unary call through the same relay (10 ms)");
    expect(text).toContain('held 2.50 KiB of server heap each (2.44 MiB for the 1,000), 1.25× the same calls attached; their replay logs kept 163 B each');
  });

  it('leaves the section out of a run that measured none of them', () => {
    expect(resultsPage(results(rows.filter((r) => r.group === 'resume')), 'r.json')).toContain('## Resumable calls');
    expect(resultsPage(results([]), 'r.json')).not.toContain('## Resumable calls');
  });
});

describe('--baseline: this build against the baseline, worst first', () => {
  const row = (metric: string, unit: string, ratio: number): Row => ({
    group: 'unary',
    metric,
    subject: 'callwire WebSocket',
    unit,
    value: 1,
    vs: [
      { peer: 'grpc-js', peerValue: 1, ratio: 9 },
      { peer: 'callwire WebSocket (baseline)', peerValue: 1, ratio, ratioMin: ratio, ratioMax: ratio },
    ],
  });

  it('counts a lower rate and a higher latency as worse, and sorts the worst first', () => {
    const lines = baselineTable([row('calls/s @1 in flight', 'calls/s', 1.05), row('p50 @1', 'ms', 1.2), row('calls/s @64 in flight', 'calls/s', 0.85)]);
    const body = lines.filter((l) => l.startsWith('| unary'));
    expect(body).toEqual([
      '| unary · p50 @1 | callwire WebSocket | 1.20× | 20.0% worse |',
      '| unary · calls/s @64 in flight | callwire WebSocket | 0.85× | 15.0% worse |',
      '| unary · calls/s @1 in flight | callwire WebSocket | 1.05× | 5.0% better |',
    ]);
  });

  it('is empty when no row was compared with a baseline', () => {
    expect(baselineTable([{ group: 'unary', metric: 'm', subject: 's', unit: 'calls/s', value: 1, vs: [] }])).toEqual([]);
  });
});

describe('the goals, before and after', () => {
  const vs = (peer: string, ratio: number): Row['vs'][number] => ({ peer, peerValue: 1, ratio, ratioMin: ratio - 0.05, ratioMax: ratio + 0.05 });
  const row = (group: string, metric: string, subject: string, ...comparisons: Row['vs']): Row => ({ group, metric, subject, unit: 'x', value: 1, vs: comparisons });
  const rows: Row[] = [
    row('unary', 'calls/s @64 in flight', WEBSOCKET, vs(FORMAT_CEILING, 0.75), vs(`${WEBSOCKET}${BASELINE}`, 1.5)),
    row('unary', 'calls/s @64 in flight', `${WEBSOCKET}${BASELINE}`, vs(FORMAT_CEILING, 0.5)),
    row('exec', 'keystroke echo, tty (median)', CALLWIRE_CLI, vs(DOCKER, 1.8)),
    row('unary', 'calls/s @1 in flight', HTTP, vs(WEBSOCKET, 0.4)),
    row('unary', 'calls/s @1 in flight', `${HTTP}${BASELINE}`, vs(`${WEBSOCKET}${BASELINE}`, 0.3), vs(WEBSOCKET, 9)),
  ];

  it('gives each goal the run measured its ratio now, the baseline build\'s same ratio, and whether it is met (at most, for a latency)', () => {
    expect(goalsTable(rows).slice(2)).toEqual([
      '| WebSocket unary @64 / format ceiling | 0.50× (0.45–0.55) | 0.75× (0.70–0.80) | ≥ 0.7× | yes |',
      '| exec -it keystroke echo / `docker exec -it` (lower is better) | – | 1.80× (1.75–1.85) | ≤ 1.5× | no |',
      // The baseline's HTTP against the baseline's WebSocket, not this build's.
      '| HTTP POST unary @1 / WebSocket | 0.30× (0.25–0.35) | 0.40× (0.35–0.45) | ≥ 0.6× | no |',
    ]);
    expect(met(GOALS.find((g) => g.atMost)!, vs(DOCKER, 1.5))).toBe(true);
  });

  it('is left out of a page whose run measured no goal', () => {
    const results = (of: readonly Row[]): Results => ({ date: '2026-01-02T03:04:05.000Z', command: 'npm run bench', machine: { cpu: 'c', cores: 2, memoryGiB: 8, node: 'v20', platform: 'Linux' }, runs: 5, seconds: 1, skipped: [], rows: of });
    expect(resultsPage(results(rows), 'r.json')).toContain('## Goals');
    expect(resultsPage(results([]), 'r.json')).not.toContain('## Goals');
  });
});

describe('--repeat: two full runs in a row, compared', () => {
  const row = (metric: string, ratio: number): Row => ({ group: 'unary', metric, subject: WEBSOCKET, unit: 'calls/s', value: 1, vs: [{ peer: FORMAT_CEILING, peerValue: 1, ratio }] });
  const run = (date: string, commit: string, rows: Row[]): Results => ({ date, commit, command: 'npm run bench', machine: { cpu: 'c', cores: 2, memoryGiB: 8, node: 'v20', platform: 'Linux' }, runs: 5, seconds: 1, skipped: [], rows });
  const first = run('2026-01-02T03:00:00.000Z', 'abc', [row('calls/s @1 in flight', 0.8), row('calls/s @64 in flight', 0.5), row('p99 @1', 1)]);
  const second = run('2026-01-02T03:10:00.000Z', 'abc', [row('calls/s @1 in flight', 0.84), row('calls/s @64 in flight', 0.6), row('p99 @1', 0.7)]);

  it('lists every median ratio that moved more than 15%, the largest first, and counts the rest', () => {
    expect(movedRatios(first, second).map((m) => Math.round(m.change * 100))).toEqual([-30, 20, 5]);
    const text = repeatSection(first, second).join('\n');
    expect(text).toContain('Of the 3 median ratios both runs measured, 1 moved by 15% or less from the first run to the second; these 2 moved more (1 of them p99 latencies');
    expect(text).toContain('| unary · p99 @1 | callwire WebSocket | format ceiling | 1.00× | 0.70× | −30.0% |');
    expect(text).toContain('| unary · calls/s @64 in flight | callwire WebSocket | format ceiling | 0.50× | 0.60× | +20.0% |');
    expect(text).not.toContain('| unary · calls/s @1 in flight |');
    expect(text).toContain('The largest move within the limit: +5.0%.');
  });

  it('compares only a later run of the same commit', () => {
    expect(notARepeat(first, second)).toBeUndefined();
    expect(notARepeat(first, { ...second, commit: 'def' })).toMatch(/different commits/);
    expect(notARepeat(second, first)).toMatch(/not later/);
    expect(repeatSection(first, { ...second, commit: 'def' })).toEqual([]);
  });

  it('puts the commit measured in the page\'s first line', () => {
    expect(resultsPage(first, 'r.json')).toContain('on 2026-01-02 03:00 UTC at commit `abc`: 2 × c');
    expect(resultsPage({ ...first, loadAtStart: 14.26 }, 'r.json')).toContain('loopback, load average 14.3 as it started. 5 interleaved rounds');
  });
});
