import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/client-node/index.js';
import { runCli } from '../support/cli.js';
import { DockerFixture } from '../support/docker.js';
import { ServerFixture } from '../support/server-fixture.js';

describe('callwire ops: the operations you may call, one line each', () => {
  const docker = new DockerFixture();
  const fx = new ServerFixture();
  beforeAll(async () => {
    await fx.start({ docker: docker.engine, webTransportPort: false });
  });
  afterAll(async () => {
    await fx.stop();
    await docker.cleanup();
  });

  it('shows the first paragraph of a description that has several (exec): a table, one row per operation', async () => {
    const client = await connect(fx.server.wsUrl);
    const operations = await client.listOperations().finally(() => client.close());
    const exec = operations.find((o) => o.name === 'docker/container/exec')!;
    expect(exec.description.split('\n\n').length).toBeGreaterThan(1);
    const run = runCli(['--url', fx.server.wsUrl, 'ops'], { stdin: 'ignore' });
    expect((await run.exited).code).toBe(0);
    const rows = run.stdout.trimEnd().split('\n');
    expect(rows).toHaveLength(operations.length + 1);
    expect(rows.find((row) => row.startsWith('docker/container/exec '))).toMatch(/subscription\s+Runs a command in a running container, like docker exec, .*exit code\.$/);
  });
});
