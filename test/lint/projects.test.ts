import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LISTED_FILES, OWN_HEAP_MARKS, projectOf, testProjects } from '../projects.js';

const root = join(import.meta.dirname, '../..');

/** The TypeScript files under `dir` (relative to root). */
const sources = (dir: string): string[] =>
  readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.ts') && !path.includes('node_modules'))
    .map((path) => `${dir}/${path.split('\\').join('/')}`);

describe('the split of the suite into projects (test/projects.ts)', () => {
  it('names only files that exist', () => {
    expect(LISTED_FILES.filter((file) => !existsSync(join(root, file)))).toEqual([]);
  });

  it('orders by test/durations.json, whose every entry names a test file as the sequencer looks it up (from the root)', () => {
    const durations = Object.keys(JSON.parse(readFileSync(join(root, 'test/durations.json'), 'utf8')) as Record<string, number>);
    const projects = testProjects(root);
    const known = new Set([...projects.unit, ...projects.integration, ...projects.serial]);
    expect(durations.length).toBeGreaterThan(0);
    expect(durations.filter((file) => !known.has(file))).toEqual([]);
  });

  it('puts every test file in exactly one project, this one in unit', () => {
    const projects = testProjects(root);
    const all = [...projects.unit, ...projects.integration, ...projects.serial];
    expect(new Set(all).size).toBe(all.length);
    expect(projects.unit).toContain('test/lint/projects.test.ts');
    expect(projects.integration.length).toBeGreaterThan(0);
    expect(projects.serial.length).toBeGreaterThan(0);
  });

  it('runs alone a file that changes the machine\'s own network, wherever it lives', () => {
    expect(projectOf('test/protocol/x.test.ts', "import { NetnsHost } from '../support/netns-host.js';")).toBe('serial');
    expect(projectOf('test/integration/x.test.ts', "import { LossyLink } from '../../bench/netns.js';")).toBe('serial');
    expect(projectOf('test/cli/x.test.ts', "execFileSync('iptables', ['-A', 'INPUT']);")).toBe('serial');
  });

  it('runs beside others a file safe by construction: a NATS cluster or fleet of its own, the shared cluster, a memory bound, namespaces of its own', () => {
    expect(projectOf('test/cli/x.test.ts', "import { NatsCluster } from '../support/nats-cluster.js';")).toBe('integration');
    expect(projectOf('test/fleet/x.test.ts', "import { Fleet } from '../support/fleet.js';")).toBe('integration');
    expect(projectOf('test/fleet/x.test.ts', "const urls = process.env['CALLWIRE_NATS_URLS'];")).toBe('integration');
    expect(projectOf('test/docker/x.test.ts', 'peak = Math.max(peak, rssOf(server.pid));')).toBe('integration');
    expect(projectOf('test/docker/x.test.ts', 'const before = process.memoryUsage().heapUsed;')).toBe('integration');
    expect(projectOf('test/cli/x.test.ts', "import { NetnsLink } from '../support/netns-link.js';")).toBe('integration');
  });

  it('never puts a bound on a file\'s own heap in serial, whose files share one process', () => {
    const heapBound = testProjects(root).serial.filter((file) => OWN_HEAP_MARKS.some((mark) => mark.test(readFileSync(join(root, file), 'utf8'))));
    expect(heapBound).toEqual([]);
  });

  it('picks a port to bind later only in test/support/ports.ts, whose ranges keep side-by-side workers apart', () => {
    const pickers = [...sources('test'), ...sources('bench')].filter((file) => file !== 'test/support/ports.ts' && /function freePorts?\(/.test(readFileSync(join(root, file), 'utf8')));
    expect(pickers).toEqual([]);
  });

  it('gives a new file outside the pure directories the Docker engine and the build (integration)', () => {
    expect(projectOf('test/server/new.test.ts', "import { startServer } from '../../src/server/index.js';")).toBe('integration');
    expect(projectOf('test/dispatcher/new.test.ts', "import { Registry } from '../../src/dispatcher/index.js';")).toBe('unit');
  });
});
