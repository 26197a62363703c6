import { connect as tcpConnect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codecs } from '../../src/protocol/index.js';
import { runCli, type CliRun } from '../support/cli.js';

/** Writes raw bytes on a fresh TCP connection and resolves with all the server said before closing it. */
function raw(port: number, request: string, waitMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    socket.on('error', () => resolve(answer));
    socket.on('close', () => resolve(answer));
    socket.write(request);
    setTimeout(() => socket.destroy(), waitMs).unref();
  });
}

/**
 * One request that the server cannot handle must end that request, never the server:
 * a target that is no URL, and an answer that JSON cannot carry (spec §5.6).
 */
describe('plain HTTP against hostile requests: the server lives', () => {
  let server: CliRun;
  let port = 0;
  const alive = async (): Promise<unknown> => {
    const res = await fetch(`http://127.0.0.1:${port}/call/conformance/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 'still here' }) });
    return ((await res.json()) as { output: unknown }).output;
  };
  beforeAll(async () => {
    server = runCli(['serve', '--port', '0', '--no-webtransport', '--conformance'], { stdin: 'ignore', env: { DOCKER_HOST: 'unix:///nonexistent.sock' } });
    const url = await server.waitFor(/ws:\/\/\S+/, 'stdout', 15_000);
    port = Number(new URL(url).port);
  });
  afterAll(async () => {
    server.child.kill('SIGKILL');
    await server.exited;
  });

  it('a request target that is no URL (//[) is answered or closed, for a call, the Lab and an upgrade alike', async () => {
    for (const request of [
      'POST //[ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n',
      'GET //[ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
      'GET //[ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    ]) {
      const answer = await raw(port, request);
      expect(answer.startsWith('HTTP/1.1 2'), answer).toBe(false);
      expect(server.child.exitCode).toBeNull();
    }
    expect(await alive()).toEqual({ value: 'still here' });
  });

  it('an answer JSON cannot carry (a msgpack integer past 2^53 is a BigInt) ends its call with INTERNAL, and the server serves on', async () => {
    const body = Buffer.from(codecs.msgpack.encode({ value: 2n ** 64n - 1n }));
    const res = await fetch(`http://127.0.0.1:${port}/call/conformance/echo`, { method: 'POST', headers: { 'content-type': 'application/msgpack' }, body });
    const answer = (await res.json()) as { outcome: string; error?: { code: string } };
    expect(answer).toMatchObject({ outcome: 'infrastructure_failure', error: { code: 'INTERNAL' } });
    expect(server.child.exitCode).toBeNull();
    expect(await alive()).toEqual({ value: 'still here' });
  });
});
