import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/longest-first.js';
import { testProjects } from './test/projects.js';

// Which file runs in which project, and why: test/projects.ts (docs/development.md "Testing").
const files = testProjects(import.meta.dirname);
// Four workers on the 2-core CI machine: much of the suite waits on clocks (conformance
// scenarios, keepalives, cut connections), which the extra workers fill; with three, the cores
// were 76% busy over a fresh clone's run. Files that were serial only for a port race run here
// too: each worker has its own ports (test/support/ports.ts).
const workers = Number(process.env['CALLWIRE_TEST_WORKERS'] ?? 4);

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll waits for something to become so (a process gone, a file written); its 1 s
    // default is a wall-clock bound no test means, which a loaded machine can stretch past.
    // A test that bounds how soon passes its own timeout.
    expect: { poll: { timeout: 10_000 } },
    // Heap measurements and real child processes want one file per worker process, not threads.
    pool: 'forks',
    poolOptions: { forks: { execArgv: ['--expose-gc'] } },
    maxWorkers: workers,
    minWorkers: 1,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: files.unit, setupFiles: ['test/unit-guard.ts'] },
      },
      {
        extends: true,
        test: { name: 'integration', include: files.integration, globalSetup: ['test/global-setup.ts'] },
      },
      {
        // After the others, alone, one file after another in one worker (vitest 3 sets no worker
        // count per project). They share its process: a bound on this process's own heap belongs
        // in integration or unit, where each file has a fork of its own (test/projects.ts).
        extends: true,
        test: { name: 'serial', include: files.serial, globalSetup: ['test/global-setup.ts'], sequence: { groupOrder: 1 }, poolOptions: { forks: { singleFork: true } } },
      },
    ],
  },
});
