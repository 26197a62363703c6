/**
 * npm run bench: callwire side by side with its peers on loopback, in one run
 * (`npm run bench -- --help` for the options). Every scenario of bench/scenarios.ts runs
 * every subject that can do it, interleaved round by round; each row is the median of
 * the rounds with its ratios to its peers. A full run writes bench/results/latest.json
 * and bench/RESULTS.md; a quick, partial or baseline run writes bench/results/subset.json.
 * Not part of npm test.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import { BenchContainer } from './container.js';
import { nodeFlags } from './built.js';
import { BenchFleet } from './fleet.js';
import { startLineup } from './lineup.js';
import { parseOptions, USAGE, type Options } from './options.js';
import { writeResultsPage } from './report.js';
import { baselineTable } from './report/baseline.js';
import { notARepeat, repeatSection } from './report/repeat.js';
import { resultsTables, rowLine } from './report/table.js';
import { commitMeasured, LATEST_JSON, machineInfo, readResults, REPEAT_JSON, RESULTS_MD, SUBSET_JSON, writeResults, type Results } from './results.js';
import { WEBSOCKET } from './names.js';
import { Recorder } from './rows.js';
import type { Bench, Scenario } from './scenario.js';
import { selectScenarios } from './scenarios.js';

const { longLivedNodeFlags } = nodeFlags;

// This process is a long-lived SDK client that reads large streams, so it runs with the
// Node flags the README gives such processes (src/cli/node-flags.ts): without them, after
// the 64 KiB streams its exec runs cost it 1.2–5.3 CPU-seconds per GiB from run to run.
// --expose-gc: each subject's turn starts from a collected heap (bench/scenarios/compare.ts).
const benchFlags = [...longLivedNodeFlags, '--expose-gc'];
if (!benchFlags.every((flag) => process.execArgv.includes(flag))) {
  const child = spawn(process.execPath, [...process.execArgv, ...benchFlags, ...process.argv.slice(1)], { stdio: 'inherit' });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  await new Promise(() => undefined);
}

let options: Options;
let scenarios: Scenario[];
try {
  options = parseOptions(process.argv.slice(2));
  scenarios = selectScenarios(options);
} catch (error) {
  console.error(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  process.exit(2);
}
if (options.repeat && !existsSync(LATEST_JSON)) {
  console.error(`--repeat compares with a first full run, and there is no ${LATEST_JSON}`);
  process.exit(2);
}
const started = Date.now();
const commit = commitMeasured();
const loadAtStart = os.loadavg()[0]!;
const lineup = await startLineup(options);
const bench: Bench = { options, lineup, record: new Recorder((row) => console.error(rowLine(row))), container: new BenchContainer(), fleet: new BenchFleet(lineup.servers[0]!.build, WEBSOCKET) };
const skipped: Results['skipped'][number][] = [];
try {
  for (const scenario of scenarios) {
    console.error(scenario.id);
    if (scenario.docker && !lineup.docker.on) {
      console.error(`  skipped: ${lineup.docker.reason}`);
      skipped.push({ scenario: scenario.id, reason: lineup.docker.reason });
      continue;
    }
    await scenario.run(bench);
  }
} finally {
  await bench.fleet.close();
  bench.container.remove();
  await lineup.close();
}

const results: Results = {
  date: new Date().toISOString(),
  command: options.command,
  machine: machineInfo(),
  ...(commit ? { commit } : {}),
  loadAtStart,
  runs: options.runs,
  seconds: Math.round((Date.now() - started) / 1000),
  skipped,
  rows: bench.record.rows,
};
const file = options.repeat ? REPEAT_JSON : (options.out ?? (options.full ? LATEST_JSON : SUBSET_JSON));
const page = options.full && !options.out;
writeResults(file, results);
if (page) writeResultsPage();
console.log(resultsTables(results.rows).join('\n'));
if (options.baseline) console.log(baselineTable(results.rows).join('\n'));
if (options.repeat) console.log(repeatSection(readResults(LATEST_JSON), results).join('\n') || `${LATEST_JSON} is not this run's first: ${notARepeat(readResults(LATEST_JSON), results)}`);
console.log(`${results.machine.cores} × ${results.machine.cpu}, ${results.machine.memoryGiB} GiB, Node ${results.machine.node}; ${results.runs} interleaved rounds; ${results.seconds} s. JSON: ${file}${page ? `; page: ${RESULTS_MD}` : ''}`);
process.exit(0);
