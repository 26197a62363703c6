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
import { LATEST_JSON, LOSS_JSON, readResults, RESULTS_MD } from './results.js';

export function writeResultsPage(source = LATEST_JSON, target = RESULTS_MD, lossSource = LOSS_JSON): void {
  const loss = existsSync(lossSource) ? (JSON.parse(readFileSync(lossSource, 'utf8')) as LossResults) : undefined;
  writeFileSync(target, resultsPage(readResults(source), source, loss));
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [source = LATEST_JSON, target = RESULTS_MD] = process.argv.slice(2);
  writeResultsPage(source, target);
  console.log(`${target} made from ${source}`);
}
