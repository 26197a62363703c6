import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, RpcError, type Client } from '../../src/client-node/index.js';
import { archivePutContract, archiveStatContract } from '../../src/contracts/index.js';
import { dockerEngine, startServer, type RunningServer } from '../../src/server/index.js';
import { craftedTar } from '../support/crafted-tar.js';
import { dockerCli, DockerFixture, dockerHost } from '../support/docker.js';

/**
 * A put that is slow because its caller is (spec §12, ARC-5; docs/security.md "Copies"),
 * with the engine's bound (docker-modem's idle timeout on the socket, 60 s in a server)
 * cut to ENGINE_TIMEOUT_MS here so the tests stay short: the put's own request has no
 * idle timeout, so a body quiet for longer than the bound, twice, completes, over
 * WebSocket and as a raw HTTP body (whose own bound, 5 s quiet, is not reached); and
 * while it runs the engine holds the container, so a request about the same container
 * waits, and ends past the bound with DOCKER_ERROR saying so, not "engine unreachable:
 * socket hang up" (what ended a trickled put's neighbours at 60 s).
 */

const ENGINE_TIMEOUT_MS = 1500;
/** Each quiet stretch of the body: longer than the engine's bound, shorter than a raw tar body's 5 s. */
const GAP_MS = 2500;
const BODY = 'a slow upload\n';

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `tar` as its header block, GAP_MS of nothing, a byte of the body, GAP_MS of nothing, the rest. */
async function* trickled(tar: Buffer): AsyncGenerator<Buffer> {
  yield tar.subarray(0, 512);
  await sleep(GAP_MS);
  yield tar.subarray(512, 513);
  await sleep(GAP_MS);
  yield tar.subarray(513);
}

describe('a slow put: its own request is never cut; a request held behind it ends saying why', () => {
  const docker = new DockerFixture();
  let server: RunningServer;
  let client: Client;
  let container = '';

  beforeAll(async () => {
    server = await startServer({ port: 0, webTransportPort: 0, http3: false, docker: dockerEngine(dockerHost, { timeoutMs: ENGINE_TIMEOUT_MS }) });
    client = await connect(server.wsUrl);
    container = await docker.container();
  }, 60_000);
  afterAll(async () => {
    await client?.close();
    await server?.close();
    await docker.cleanup();
  });

  it(`a put quiet for ${GAP_MS / 1000} s twice (the engine's bound: ${ENGINE_TIMEOUT_MS / 1000} s) through WebSocket completes, the file whole; a stat of the same container meanwhile ends DOCKER_ERROR "did not answer"`, async () => {
    const tar = craftedTar([{ path: 'slow-ws', type: 'File', body: BODY }]);
    const input = (async function* () {
      for await (const chunk of trickled(tar)) yield { data: chunk };
    })();
    const put = (async () => {
      let end: unknown;
      for await (const item of client.iterate(archivePutContract, { containerId: container, path: '/tmp' }, { input })) end = item;
      return end;
    })();
    await sleep(GAP_MS / 5);
    const held = client.call(archiveStatContract, { containerId: container, path: '/tmp' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(await put).toEqual({ terminal: true, bytes: tar.byteLength, sha256: sha256(tar) });
    const refusal = await held;
    expect(refusal).toBeInstanceOf(RpcError);
    expect((refusal as RpcError).code).toBe('DOCKER_ERROR');
    expect((refusal as RpcError).message).toMatch(/^the Docker engine did not answer within \d+ s \(it answers nothing about a container while a copy into it runs\)$/);
    expect((await dockerCli(['exec', container, 'cat', '/tmp/slow-ws'])).stdout.toString()).toBe(BODY);
  }, 60_000);

  it('the same body as a raw tar over HTTP (curl -T): 200, its terminal frame the whole tar\'s, the file whole', async () => {
    const tar = craftedTar([{ path: 'slow-http', type: 'File', body: BODY }]);
    const query = encodeURIComponent(JSON.stringify({ containerId: container, path: '/tmp' }));
    const { hostname, port } = new URL(server.wsUrl);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: hostname, port, method: 'PUT', path: `/call/${archivePutContract.name}?input=${query}`, headers: { 'content-type': 'application/x-tar' } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      void (async () => {
        for await (const chunk of trickled(tar)) req.write(chunk);
        req.end();
      })();
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body.trim().split('\n')[0]!)).toEqual({ terminal: true, bytes: tar.byteLength, sha256: sha256(tar) });
    expect((await dockerCli(['exec', container, 'cat', '/tmp/slow-http'])).stdout.toString()).toBe(BODY);
  }, 60_000);
});
