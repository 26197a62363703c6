import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

describe('callwire --version', () => {
  it("prints the package's version and exits 0, as -V does", async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const run = runCli([flag]);
      const { code } = await run.exited;
      expect(code).toBe(0);
      expect(run.stdout.trim()).toBe(version);
    }
  });
});
