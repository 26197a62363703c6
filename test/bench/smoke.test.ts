import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FLEET, WEBSOCKET, WEBSOCKET_RESUMABLE } from '../../bench/names.js';
import { readResults, type Results } from '../../bench/results.js';
import { ATTACHED, FRESH_CALL, FRESH_CALL_METRIC, perResumableCall, SINCE_CUT_END, SINCE_RECONNECT } from '../../bench/scenarios/resume-metrics.js';

/** `npm run bench -- <args> --out <tmp>`: the real bench against its real servers; its results. */
async function runBench(args: readonly string[]): Promise<{ results: Results; out: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
  const out = join(dir, 'results.json');
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', ...args, '--out', out], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, stderr).toBe(0);
    return { results: readResults(out), out };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * One-round bench runs, as the coordinator compares two builds: each subject ran and each
 * ratio was taken. What the figures are is no test's business here.
 */
describe('a one-round bench run of the unary scenario', () => {
  it('measures every unary subject in the same rounds and gives HTTP its ratio to the WebSocket', async () => {
    const { results, out } = await runBench(['--quick', '--only', 'unary', '--runs', '1']);
    expect(results.command).toBe('npm run bench -- --quick --only unary --runs 1 --out ' + out);
    const rates = results.rows.filter((r) => r.metric === 'calls/s @1 in flight');
    expect(rates.map((r) => r.subject).sort()).toEqual(['bare node:http echo (HTTP ceiling)', 'callwire HTTP', 'callwire HTTP (fetch)', 'callwire WebSocket', 'format ceiling', 'grpc-js', 'raw ws']);
    for (const row of rates) expect(row.value).toBeGreaterThan(0);
    const http = rates.find((r) => r.subject === 'callwire HTTP')!;
    const ws = rates.find((r) => r.subject === 'callwire WebSocket')!;
    const vsWs = http.vs.find((c) => c.peer === 'callwire WebSocket');
    expect(vsWs).toMatchObject({ peerValue: ws.value, ratio: http.value / ws.value });
    const ceiling = rates.find((r) => r.subject === 'bare node:http echo (HTTP ceiling)')!;
    expect(http.vs.find((c) => c.peer === ceiling.subject)).toMatchObject({ peerValue: ceiling.value, ratio: http.value / ceiling.value });
    expect(ws.vs.map((c) => c.peer)).toEqual(['grpc-js', 'raw ws', 'format ceiling']);
  });
});

describe('one-round bench runs of resumable calls (spec §4.9)', () => {
  it('streams resumable beside plain in the same rounds, and divides the one by the other', async () => {
    const { results } = await runBench(['--quick', '--only', 'stream-100B', '--runs', '1']);
    const rows = results.rows.filter((r) => r.metric === '100 B items');
    const plain = rows.find((r) => r.subject === WEBSOCKET)!;
    const resumable = rows.find((r) => r.subject === WEBSOCKET_RESUMABLE)!;
    expect(resumable.value).toBeGreaterThan(0);
    expect(resumable.vs).toEqual([{ peer: WEBSOCKET, peerValue: plain.value, ratio: resumable.value / plain.value, ratioMin: resumable.value / plain.value, ratioMax: resumable.value / plain.value }]);
  });

  it('times a cut stream back against a fresh connect, and weighs 1,000 detached calls against the same calls attached', async () => {
    const { results } = await runBench(['--only', 'resume-cut,memory-resumable', '--runs', '1']);
    const fresh = results.rows.find((r) => r.metric === FRESH_CALL_METRIC && r.subject === WEBSOCKET)!;
    expect(fresh.value).toBeGreaterThan(0);
    for (const prefix of [SINCE_CUT_END, SINCE_RECONNECT]) {
      const row = results.rows.find((r) => r.group === 'resume' && r.metric.startsWith(prefix) && r.subject === WEBSOCKET_RESUMABLE)!;
      expect(row.value).toBeGreaterThan(0);
      expect(row.vs).toEqual([expect.objectContaining({ peer: FRESH_CALL, peerValue: fresh.value, ratio: row.value / fresh.value })]);
    }
    const held = (part: 'heap' | 'replay kept', state: 'attached' | 'detached') => results.rows.find((r) => r.metric === perResumableCall(part, state) && r.subject === WEBSOCKET_RESUMABLE)!;
    // A detached call keeps at most the one item its caller may not have acknowledged yet (it acknowledges on arrival, RSM-3).
    const kept = held('replay kept', 'detached').value;
    expect(kept).toBeGreaterThanOrEqual(0);
    expect(kept).toBeLessThan(200);
    expect(held('heap', 'detached').vs).toEqual([expect.objectContaining({ peer: ATTACHED, peerValue: held('heap', 'attached').value })]);
  });
});

/**
 * The fleet's rows (issue 24): a NATS cluster, an agent and a gateway of the bench's own,
 * each row measured through the gateway beside the direct WebSocket in the same round.
 */
describe('a one-round bench run of the fleet beside the direct path', () => {
  it('divides a unary Docker call through the fleet by the same direct, times a container to routable, and weighs the gateway per idle host', async () => {
    const { results } = await runBench(['--quick', '--only', 'fleet-memory,fleet-unary-1,fleet-routable', '--runs', '1']);
    const rows = results.rows.filter((r) => r.group === 'fleet');
    const fleetRow = (metric: string) => rows.find((r) => r.metric.startsWith(metric) && r.subject === FLEET)!;
    const directRow = (metric: string) => rows.find((r) => r.metric.startsWith(metric) && r.subject === WEBSOCKET)!;
    for (const metric of ['docker/container/inspect calls/s @1', 'docker/container/inspect p50 @1']) {
      const fleet = fleetRow(metric);
      const direct = directRow(metric);
      expect(fleet.value).toBeGreaterThan(0);
      expect(fleet.vs).toEqual([{ peer: WEBSOCKET, peerValue: direct.value, ratio: fleet.value / direct.value, ratioMin: fleet.value / direct.value, ratioMax: fleet.value / direct.value }]);
    }
    const routable = fleetRow('`docker run`');
    expect(routable.value).toBeGreaterThan(0);
    expect(routable.vs[0]!.peerValue).toBe(directRow('`docker run`').value);
    const heap = fleetRow('gateway heap with');
    expect(heap.vs[0]).toMatchObject({ peer: 'no idle hosts' });
    // Fifty hosts' tables (the quick size) cost the gateway something: a reading taken before it knew them would not.
    expect(fleetRow('gateway heap per idle host').value).toBeGreaterThan(0);
    // A NATS cluster, an agent and two gateways start within the run.
  }, 180_000);
});
