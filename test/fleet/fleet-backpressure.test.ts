import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFrames, type Client } from '../../src/client/index.js';
import { DockerFixture } from '../support/docker.js';
import { Fleet, type GatewayRun } from '../support/fleet.js';
import { rssOf } from '../support/proc.js';
import { sleep } from '../support/wait.js';

const MIB = 1024 * 1024;
/** MiB the command prints, one at a time, writing how many it has printed to a file after each. */
const TOTAL_MIB = 256;
const PRODUCER = `i=0; while [ $i -lt ${TOTAL_MIB} ]; do head -c ${MIB} /dev/zero; i=$((i+1)); echo $i > /tmp/produced; done`;
/**
 * What may be printed but not yet taken by the caller: the call's window at the gateway and
 * at the agent, the agent's NATS outbound bound (8 MiB), the pipes and the engine's
 * buffers. Without backpressure the command prints its whole 256 MiB while nobody reads.
 */
const IN_FLIGHT_BOUND_MIB = 48;
/** How much the agent's or the gateway's memory may grow while the caller does not read. */
const MEMORY_BOUND = 96 * MIB;

/**
 * BP-3/BP-4 through the fleet (spec §8, docs/fleet.md): a caller of a gateway that stops
 * reading an exec holds the command on the agent's host at a bound: neither the gateway
 * nor the agent keeps what the caller does not take, and once it reads again every byte
 * arrives. A real NATS server, a real agent and gateway (the CLI's processes) and the real engine.
 */
describe('a fleet caller that stops reading holds the agent\'s producer', () => {
  const docker = new DockerFixture();
  let fleet: Fleet;
  let gateway: GatewayRun;
  let client: Client;
  let containerId = '';

  beforeAll(async () => {
    // A cluster of one node, as the other fleet tests start: nothing to form, so nothing to wait for under load.
    fleet = await Fleet.start({ hosts: ['a'], nodes: 1 });
    await fleet.agent('a');
    gateway = await fleet.gateway({ waitHosts: ['a'] });
    client = await fleet.client(gateway);
    containerId = await docker.container();
  }, 90_000);

  afterAll(async () => {
    await fleet?.stop();
    await docker.cleanup();
  });

  const produced = async (): Promise<number> => {
    const out = await docker.engine.docker.getContainer(containerId).exec({ Cmd: ['cat', '/tmp/produced'], AttachStdout: true, AttachStderr: true });
    const stream = await out.start({});
    const chunks: Buffer[] = [];
    for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
    // The engine's multiplexed records: 8 bytes of header, then the text.
    const text = Buffer.concat(chunks).subarray(8).toString('utf8').trim();
    return Number(text) || 0;
  };

  it('exec of 256 MiB: while the caller does not read, the command is held within the bound and the agent and gateway do not grow; then every byte arrives', async () => {
    const agentPid = fleet.agents.get('a')!.child.pid!;
    const gatewayPid = gateway.run.child.pid!;
    const frames = execFrames(client, `a/${containerId}`, ['sh', '-c', PRODUCER], { encoding: 'binary' });
    let received = 0;
    const take = (value: { stream?: string; data?: Uint8Array }): void => {
      if (value.stream === 'stdout' && value.data) received += value.data.byteLength;
    };
    const first = await frames.next();
    if (!first.done) take(first.value as { stream?: string; data?: Uint8Array });
    const memoryBefore = { agent: rssOf(agentPid), gateway: rssOf(gatewayPid) };
    let agentPeak = 0;
    let gatewayPeak = 0;
    let producedPeak = 0;
    // Not reading: sample what the command printed and what the processes hold.
    for (let sample = 0; sample < 10; sample++) {
      await sleep(500);
      producedPeak = Math.max(producedPeak, await produced());
      agentPeak = Math.max(agentPeak, rssOf(agentPid) - memoryBefore.agent);
      gatewayPeak = Math.max(gatewayPeak, rssOf(gatewayPid) - memoryBefore.gateway);
      expect(producedPeak - received / MIB, 'MiB printed but not taken by the caller').toBeLessThanOrEqual(IN_FLIGHT_BOUND_MIB);
    }
    console.log(`paused caller: ${producedPeak} MiB printed, ${(received / MIB).toFixed(1)} taken; agent RSS +${(agentPeak / MIB).toFixed(1)} MiB, gateway +${(gatewayPeak / MIB).toFixed(1)} MiB`);
    expect(producedPeak, 'the command was held, not run to its end').toBeLessThan(TOTAL_MIB);
    expect(agentPeak).toBeLessThan(MEMORY_BOUND);
    expect(gatewayPeak).toBeLessThan(MEMORY_BOUND);
    for (let step = await frames.next(); ; step = await frames.next()) {
      if (step.done) {
        expect(step.value.exitCode).toBe(0);
        break;
      }
      take(step.value as { stream?: string; data?: Uint8Array });
    }
    expect(received).toBe(TOTAL_MIB * MIB);
  }, 180_000);
});
