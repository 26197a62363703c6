/** The bench's results file (bench/results/latest.json): what ran, where, and its rows. */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import os from 'node:os';
import type { Row } from './rows.js';

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
  /** The Docker engine's version, when one answered. */
  readonly docker?: string;
}

export interface Results {
  /** When the run ended, ISO 8601. */
  readonly date: string;
  /** The command line that made it. */
  readonly command: string;
  readonly machine: Machine;
  /** The commit measured (`git describe`-like: its short hash, `-dirty` with uncommitted changes); absent outside a checkout. */
  readonly commit?: string;
  /**
   * The machine's 1-minute load average as the run started (its build included): rows whose
   * path has more processes than their peer's lose most on a machine busy with other work.
   */
  readonly loadAtStart?: number;
  /** Interleaved rounds per scenario. */
  readonly runs: number;
  /** How long the whole run took. */
  readonly seconds: number;
  /** Scenarios that did not run, and why. */
  readonly skipped: readonly { readonly scenario: string; readonly reason: string }[];
  readonly rows: readonly Row[];
}

/** A full run's results, from which bench/RESULTS.md is made. */
export const LATEST_JSON = 'bench/results/latest.json';
/** A quick, `--only` or `--baseline` run's (not committed). */
export const SUBSET_JSON = 'bench/results/subset.json';
export const RESULTS_MD = 'bench/RESULTS.md';
export const LOSS_JSON = 'bench/results/loss.json';
/** The second of two full runs in a row (`--repeat`), compared with latest.json on the page. */
export const REPEAT_JSON = 'bench/results/repeat.json';

/**
 * The checkout's commit, `-dirty` when tracked files differ from it (the bench's own
 * results aside: a `--repeat` run follows a run that rewrote them); undefined outside git.
 */
export function commitMeasured(): string | undefined {
  const git = (...args: string[]): string | undefined => {
    const r = spawnSync('git', args, { encoding: 'utf8', timeout: 10_000 });
    return r.status === 0 ? r.stdout.trim() : undefined;
  };
  const head = git('rev-parse', '--short=9', 'HEAD');
  if (!head) return undefined;
  return git('status', '--porcelain', '--untracked-files=no', '--', ':(top)', ':(top,exclude)bench/results', `:(top,exclude)${RESULTS_MD}`) ? `${head}-dirty` : head;
}

export function machineInfo(): Machine {
  const docker = spawnSync('/usr/bin/docker', ['version', '--format', '{{.Server.Version}}'], { encoding: 'utf8', timeout: 10_000 });
  const version = docker.status === 0 ? docker.stdout.trim() : '';
  return {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.type()} ${os.release()}`,
    ...(version ? { docker: version } : {}),
  };
}

export const readResults = (path: string): Results => JSON.parse(readFileSync(path, 'utf8')) as Results;

export function writeResults(path: string, results: Results): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
}
