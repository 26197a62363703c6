import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canMakeNamespaces, LossyLink } from '../../bench/netns.js';
import { connect, type ConnectOptions } from '../../src/client-node/index.js';
import { patternDigest, receivePattern } from '../support/sample-ops.js';
import { http3Missing } from '../support/server-fixture.js';
import { skipTitle } from '../support/skip.js';

const MIB = 1024 * 1024;

/**
 * Every carrier on a link that drops 5% of packets both ways: the server in a network
 * namespace made for this test (removed after it), nothing leaving it. Nothing is lost
 * or reordered, whatever the carrier does to recover. `npm run bench:loss` measures the
 * same at 0%, 1% and 5% (bench/RESULTS.md "Loss").
 */
const noNamespaces = canMakeNamespaces() ? undefined : 'no network namespaces here (root, ip netns and iptables)';
describe.skipIf(noNamespaces !== undefined)(skipTitle('carriers on a link that drops 5% of packets', noNamespaces), () => {
  let link: LossyLink;
  let server: ChildProcess;
  let addresses: { wsUrl: string; wtUrl: string; certHash: string; http3: boolean };
  const token = randomBytes(16).toString('hex');

  beforeAll(async () => {
    link = new LossyLink();
    const [command, ...args] = link.exec([process.execPath, '--import', 'tsx', 'bench/loss-server.ts', link.address, token]);
    server = spawn(command!, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    addresses = await new Promise((resolve) => createInterface({ input: server.stdout! }).once('line', (line) => resolve(JSON.parse(line))));
    link.loss(0.05);
  }, 30_000);
  afterAll(async () => {
    server?.kill('SIGTERM');
    await new Promise((resolve) => server?.once('exit', resolve));
    link?.remove();
  });

  // [carrier, its address and options, why this machine cannot run it]
  const carriers: [string, () => [string, ConnectOptions], (string | undefined)?][] = [
    ['WebSocket', () => [addresses.wsUrl, { token }]],
    ['WebTransport HTTP/2', () => [addresses.wtUrl, { token, certHash: addresses.certHash, transport: 'h2' }]],
    ['WebTransport HTTP/3', () => [addresses.wtUrl, { token, certHash: addresses.certHash, transport: 'h3' }], http3Missing],
  ];
  for (const [name, target, missing] of carriers) {
    it.skipIf(missing !== undefined)(skipTitle(`${name}: 8 MiB of a known pattern arrive whole and in order, and 100 calls in a row each get their own answer`, missing), async () => {
      const [url, options] = target();
      const client = await connect(url, { ...options, connectTimeoutMs: 20_000 });
      if (name.includes('HTTP/3')) expect(client.carrier).toBe('http/3');
      expect(await receivePattern(client, 8 * MIB, 64 * 1024)).toEqual({ bytes: 8 * MIB, digest: patternDigest(8 * MIB, 64 * 1024) });
      for (let i = 0; i < 100; i++) expect(await client.call('test/echo', { text: `call ${i}` })).toEqual({ text: `call ${i}` });
      await client.close();
    }, 120_000);
  }
});
