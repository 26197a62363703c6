import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/client-node/index.js';
import { startServer } from '../../src/server/index.js';
import { runCli } from '../support/cli.js';
import { ServerFixture } from '../support/server-fixture.js';

/** serve --socket: the WebSocket and HTTP calls on a unix socket, for callers on the same machine. */
describe('the unix socket listener', () => {
  const dir = mkdtempSync(join(tmpdir(), 'callwire-unix-'));
  const path = join(dir, 'callwire.sock');
  const fx = new ServerFixture();
  beforeAll(() => fx.start({ socketPath: path, webTransportPort: false }).then(() => undefined));
  afterAll(async () => {
    await fx.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is a socket only its owner can open (0600), named by a ws+unix:// URL', () => {
    expect(statSync(path).isSocket()).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(fx.server.unixUrl).toBe(`ws+unix://${path}:/callwire`);
  });

  it('serves the SDK, the CLI and curl --unix-socket', async () => {
    const client = await connect(fx.server.unixUrl!);
    expect(client.carrier).toBe('websocket');
    expect(await client.call('test/echo', { text: 'over a unix socket' })).toEqual({ text: 'over a unix socket' });
    let bytes = 0;
    for await (const item of client.iterate<{ data: Uint8Array }>('test/bytes', { totalBytes: 8 * 1024 * 1024, chunkBytes: 65536 })) bytes += item.data.byteLength;
    expect(bytes).toBe(8 * 1024 * 1024);
    await client.close();
    const cli = runCli(['--url', fx.server.unixUrl!, 'call', 'test/echo', '--input', '{"text":"cli"}'], { stdin: 'ignore' });
    expect((await cli.exited).code).toBe(0);
    expect(cli.stdout).toBe('{"text":"cli"}\n');
    // Not execFileSync: the server answering curl runs in this process.
    const { stdout: curl } = await promisify(execFile)('curl', ['-s', '--unix-socket', path, '-H', 'content-type: application/json', '-d', '{"text":"curl"}', 'http://localhost/call/test/echo'], { encoding: 'utf8' });
    expect(JSON.parse(curl)).toMatchObject({ outcome: 'success', output: { text: 'curl' } });
  });

  it('refuses a path another server is using, and replaces a socket file a dead server left', async () => {
    await expect(startServer({ port: 0, webTransportPort: false, docker: false, socketPath: path })).rejects.toThrow(/in use by another server/);
    const stale = join(dir, 'stale.sock');
    const dead = createServer();
    await new Promise<void>((resolve) => dead.listen(stale, resolve));
    // Gone without unlinking its file, as a killed process leaves it.
    (dead as unknown as { _handle: { close(): void } })._handle.close();
    const server = await startServer({ port: 0, webTransportPort: false, docker: false, socketPath: stale });
    try {
      const client = await connect(server.unixUrl!);
      expect((await client.listOperations()).length).toBeGreaterThan(0);
      await client.close();
    } finally {
      await server.close();
    }
  });

  it('is not a file a bad path can clobber: a regular file in the way is refused', async () => {
    const file = join(dir, 'not-a-socket');
    writeFileSync(file, 'keep me');
    await expect(startServer({ port: 0, webTransportPort: false, docker: false, socketPath: file })).rejects.toThrow(/not a socket/);
  });
});
