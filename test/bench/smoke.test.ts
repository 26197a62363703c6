import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readResults } from '../../bench/results.js';

/**
 * `npm run bench -- --quick --only unary`, one round, as the coordinator compares two
 * builds: the real bench against its real servers, with the WebSocket and HTTP unary rows
 * of the same rounds, HTTP's divided by the WebSocket's. What the figures are is no test's
 * business here; that each subject ran and each ratio was taken is.
 */
describe('a one-round bench run of the unary scenario', () => {
  it('measures every unary subject in the same rounds and gives HTTP its ratio to the WebSocket', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'bench-smoke-')), 'results.json');
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--quick', '--only', 'unary', '--runs', '1', '--out', out], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, stderr).toBe(0);

    const results = readResults(out);
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
