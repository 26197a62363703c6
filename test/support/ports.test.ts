import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, freePorts, workerPorts } from './ports.js';

const poolId = process.env['VITEST_POOL_ID'];
const listen = (port: number): Promise<Server> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });

describe('ports a test picks now and binds later (test/support/ports.ts)', () => {
  afterEach(() => {
    process.env['VITEST_POOL_ID'] = poolId;
  });

  it('come from below the kernel\'s ephemeral range, from a range of each worker\'s own', async () => {
    const [ephemeralFrom] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    const ranges = [];
    for (const worker of ['1', '2', '3', '4']) {
      process.env['VITEST_POOL_ID'] = worker;
      const range = workerPorts();
      const ports = await freePorts('127.0.0.1', 50);
      expect(new Set(ports).size).toBe(50);
      expect(ports.filter((port) => port < range.first || port > range.last)).toEqual([]);
      ranges.push(range);
    }
    ranges.sort((a, b) => a.first - b.first);
    expect(ranges.at(-1)!.last).toBeLessThan(ephemeralFrom!);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.first).toBeGreaterThan(ranges[i - 1]!.last);
  });

  it('pass over a port something listens on', async () => {
    const first = await freePort('127.0.0.1');
    const taken = await listen(first + 1);
    try {
      const next = await freePort('127.0.0.1');
      expect(next).not.toBe(first + 1);
      await listen(next).then((server) => server.close());
    } finally {
      taken.close();
    }
  });
});
