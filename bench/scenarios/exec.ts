/**
 * docker exec's job: `dd` of many MiB out of a container, every subject that execs,
 * with what each path costs the whole machine per GiB (every process: the engine, its
 * shim, our server and client, the docker CLI; kernel time included) and how busy the
 * machine was. When the machine is saturated in every path, throughput follows CPU per
 * byte, and the CPU ratio says why the MB/s ratio is what it is (bench/PROFILE.md).
 */
import { costed } from '../measure.js';
import type { Bench } from '../scenario.js';
import type { Subject } from '../subject.js';
import { pick, recordAll, roundsOf } from './compare.js';

const MB = 1e6;
const GIB = 2 ** 30;

export const ddMiB = (quick: boolean): number => (quick ? 64 : 512);

/** Every subject that execs, or those given (the fleet's rows, in their `group`). */
export async function execThroughput(bench: Bench, subjects: readonly Subject[] = bench.lineup.subjects.filter((s) => s.exec), group = 'exec'): Promise<void> {
  const mib = ddMiB(bench.options.quick);
  const dd = ['dd', 'if=/dev/zero', 'bs=1M', `count=${mib}`];
  const ddBytes = mib * 1024 * 1024;
  const container = bench.container.get();
  const runs = await roundsOf(bench, subjects, bench.options.runs, (s) =>
    costed(async () => {
      const t = performance.now();
      const bytes = (await s.exec!(container, dd)) ?? ddBytes;
      return bytes / MB / ((performance.now() - t) / 1000);
    }, s.processes),
  );
  const processMetrics = [...new Set(subjects.flatMap((s) => Object.keys(s.processes ?? {})))].map((part) => ({
    key: { group, metric: `CPU-seconds per GiB of output, the ${part} process`, unit: 's/GiB' },
    values: pick(
      Object.fromEntries(Object.entries(runs).filter(([, r]) => r[0]!.processes[part] !== undefined)),
      (c) => c.processes[part]! / (ddBytes / GIB),
    ),
  }));
  recordAll(bench.record, subjects, [
    { key: { group, metric: `dd ${mib} MiB of output`, unit: 'MB/s' }, values: pick(runs, (c) => c.value) },
    { key: { group, metric: 'machine CPU-seconds per GiB of output', unit: 's/GiB' }, values: pick(runs, (c) => c.machineCpuSeconds / (ddBytes / GIB)) },
    { key: { group, metric: 'machine busy during the run', unit: '% of all cores' }, values: pick(runs, (c) => 100 * c.busyShare), compare: false },
    ...processMetrics,
  ]);
}

/** The round trip of `true`: an exec's whole life, start to exit code. */
export async function execRoundTrip(bench: Bench): Promise<void> {
  const container = bench.container.get();
  const subjects = bench.lineup.subjects.filter((s) => s.exec);
  const values = await roundsOf(bench, subjects, 10, async (s) => {
    const t = performance.now();
    await s.exec!(container, ['true']);
    return performance.now() - t;
  });
  recordAll(bench.record, subjects, [{ key: { group: 'exec', metric: 'round trip of `true`', unit: 'ms' }, values }]);
}
