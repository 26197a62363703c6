import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LISTED_FILES, projectOf, testProjects } from '../projects.js';

const root = join(import.meta.dirname, '../..');

describe('the split of the suite into projects (test/projects.ts)', () => {
  it('names only files that exist', () => {
    expect(LISTED_FILES.filter((file) => !existsSync(join(root, file)))).toEqual([]);
  });

  it('puts every test file in exactly one project, this one in unit', () => {
    const projects = testProjects(root);
    const all = [...projects.unit, ...projects.integration, ...projects.serial];
    expect(new Set(all).size).toBe(all.length);
    expect(projects.unit).toContain('test/lint/projects.test.ts');
    expect(projects.integration.length).toBeGreaterThan(0);
    expect(projects.serial.length).toBeGreaterThan(0);
  });

  it('runs alone a file that starts a NATS cluster or a fleet, uses network namespaces, or measures memory, wherever it lives', () => {
    expect(projectOf('test/protocol/x.test.ts', "import { NatsCluster } from '../support/nats-cluster.js';")).toBe('serial');
    expect(projectOf('test/integration/x.test.ts', "import { Fleet } from '../support/fleet.js';")).toBe('serial');
    expect(projectOf('test/cli/x.test.ts', "execFileSync('ip', ['netns', 'add', ns]);")).toBe('serial');
    expect(projectOf('test/dispatcher/x.test.ts', 'const before = process.memoryUsage().heapUsed;')).toBe('serial');
  });

  it('gives a new file outside the pure directories the Docker engine and the build (integration)', () => {
    expect(projectOf('test/server/new.test.ts', "import { startServer } from '../../src/server/index.js';")).toBe('integration');
    expect(projectOf('test/dispatcher/new.test.ts', "import { Registry } from '../../src/dispatcher/index.js';")).toBe('unit');
  });
});
