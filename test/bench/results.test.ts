import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { commitMeasured } from '../../bench/results.js';

describe('the commit a run measured', () => {
  const home = process.cwd();
  let repo = '';
  afterEach(() => {
    process.chdir(home);
    if (repo) rmSync(repo, { recursive: true, force: true });
  });

  it('is the checkout\'s short hash, -dirty when a tracked file changed, but not for the bench\'s own results', () => {
    repo = mkdtempSync(join(tmpdir(), 'bench-commit-'));
    const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: repo, encoding: 'utf8' }).trim();
    git('init', '-q');
    mkdirSync(join(repo, 'bench/results'), { recursive: true });
    for (const file of ['bench/RESULTS.md', 'bench/results/latest.json', 'src.ts']) writeFileSync(join(repo, file), 'a\n');
    git('add', '-A');
    git('commit', '-qm', 'one');
    const head = git('rev-parse', '--short=9', 'HEAD');
    process.chdir(join(repo, 'bench'));
    expect(commitMeasured()).toBe(head);
    writeFileSync(join(repo, 'bench/RESULTS.md'), 'b\n');
    writeFileSync(join(repo, 'bench/results/latest.json'), 'b\n');
    expect(commitMeasured()).toBe(head);
    writeFileSync(join(repo, 'src.ts'), 'b\n');
    expect(commitMeasured()).toBe(`${head}-dirty`);
  });
});
