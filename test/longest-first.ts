import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** test/durations.json: seconds per test file, from a CI run's report (scripts/test-durations.mjs writes it). */
const DURATIONS = join(import.meta.dirname, 'durations.json');

/**
 * Starts the longest files first, so two workers end together instead of one waiting on
 * the other's last long file. A fresh clone has no vitest cache: the durations come from
 * test/durations.json; a file it does not know yet counts by its size (bytes / 100 ≈ seconds
 * of a typical integration file), which puts a large new file early.
 */
export class LongestFirst extends BaseSequencer {
  private readonly seconds: Record<string, number> = existsSync(DURATIONS) ? (JSON.parse(readFileSync(DURATIONS, 'utf8')) as Record<string, number>) : {};

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const estimate = (spec: TestSpecification): number => {
      const file = relative(root, spec.moduleId).split('\\').join('/');
      return this.seconds[file] ?? statSync(spec.moduleId).size / 100;
    };
    const estimated = new Map(files.map((spec) => [spec, estimate(spec)]));
    return [...files].sort((a, b) => estimated.get(b)! - estimated.get(a)!);
  }
}
