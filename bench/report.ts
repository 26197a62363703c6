/**
 * `npx tsx bench/report.ts [results.json] [page.md]`: makes bench/RESULTS.md from
 * bench/results/latest.json (and loss.json) without running the bench. `npm run bench`
 * calls it after a full run.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { LossResults } from './loss-table.js';
import { resultsPage } from './report/page.js';
import { LATEST_JSON, LOSS_JSON, readResults, REPEAT_JSON, RESULTS_MD } from './results.js';

/** The fleet's rows from a run of their own: `npm run bench -- --only fleet --out bench/results/fleet.json`. */
export const FLEET_JSON = 'bench/results/fleet.json';

export function writeResultsPage(source = LATEST_JSON, target = RESULTS_MD, lossSource = LOSS_JSON, fleetSource = FLEET_JSON, repeatSource = REPEAT_JSON): void {
  const loss = existsSync(lossSource) ? (JSON.parse(readFileSync(lossSource, 'utf8')) as LossResults) : undefined;
  const fleet = existsSync(fleetSource) ? readResults(fleetSource) : undefined;
  const repeat = existsSync(repeatSource) ? readResults(repeatSource) : undefined;
  writeFileSync(target, resultsPage(readResults(source), source, loss, fleet, repeat));
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [source = LATEST_JSON, target = RESULTS_MD] = process.argv.slice(2);
  writeResultsPage(source, target);
  console.log(`${target} made from ${source}`);
}
