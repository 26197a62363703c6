/** `npm run bench -- [options]`: what to run, how long, and against which other build. */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

export interface Options {
  /** A short subset: fewer rounds, smaller sizes, no WebTransport and no CLI process subjects. */
  readonly quick: boolean;
  /** Scenario ids or groups to run (all when undefined). */
  readonly only: readonly string[] | undefined;
  /** Another build's `dist/`, run beside this one's, every callwire subject twice. */
  readonly baseline: string | undefined;
  /** Interleaved rounds per scenario. */
  readonly runs: number;
  /** How long each unary load runs, per round. */
  readonly unaryMs: number;
  /** Where the results go instead of bench/results/ (and then bench/RESULTS.md is left alone). */
  readonly out: string | undefined;
  /** The command line that reproduces this run. */
  readonly command: string;
  /** A round before the kept ones, to warm every subject up (all but `--quick`). */
  readonly warmUp: boolean;
  /** Every scenario (with or without a baseline beside it): the run bench/RESULTS.md is made from. */
  readonly full: boolean;
  /** The second of two full runs in a row: its medians are compared with the first's (bench/results/repeat.json). */
  readonly repeat: boolean;
}

export const USAGE = `npm run bench -- [--quick] [--only <id|group>[,…]] [--baseline <dist dir>] [--runs <n>]
  --quick      a short subset: 3 rounds, small sizes, WebSocket, HTTP and the peers only
               (a scenario named by its id in --only runs, at its small size)
  --only       run these scenarios (ids or groups; see bench/scenarios.ts), e.g. --only unary
  --baseline   another build's dist/ (built in its own clone), run beside this one, interleaved
  --runs       interleaved rounds (default 5, 3 with --quick; or BENCH_RUNS)
  --out        write the results JSON here (and leave bench/RESULTS.md alone)
  --repeat     a second full run right after the first: written to bench/results/repeat.json, and
               bench/RESULTS.md made again with how far each median ratio moved between the two`;

export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: { quick: { type: 'boolean' }, only: { type: 'string' }, baseline: { type: 'string' }, runs: { type: 'string' }, out: { type: 'string' }, repeat: { type: 'boolean' }, help: { type: 'boolean' } },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const quick = values.quick ?? false;
  const runs = Number(values.runs ?? env['BENCH_RUNS'] ?? (quick ? 3 : 5));
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a whole number of rounds, not ${values.runs ?? env['BENCH_RUNS']}`);
  const only = values.only?.split(',').map((s) => s.trim()).filter(Boolean);
  const baseline = values.baseline === undefined ? undefined : resolve(values.baseline);
  if (values.repeat && (quick || only || values.out)) throw new Error('--repeat repeats a full run: not with --quick, --only or --out');
  const passed = argv.length ? ` -- ${argv.join(' ')}` : '';
  return {
    quick,
    only,
    baseline,
    runs,
    unaryMs: quick ? 500 : 1500,
    out: values.out,
    command: `${env['BENCH_RUNS'] ? `BENCH_RUNS=${env['BENCH_RUNS']} ` : ''}npm run bench${passed}`,
    warmUp: !quick,
    full: !quick && !only,
    repeat: values.repeat ?? false,
  };
}
