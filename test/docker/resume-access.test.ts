import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawConnect, type RawConnectOptions } from '../../src/conformance/raw-connection.js';
import type { RawPeer } from '../../src/conformance/raw-peer.js';
import type { Envelope } from '../../src/protocol/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';
import { DockerFixture } from '../support/docker.js';

/** alice, who may exec (scopes alone govern a container callwire did not create). */
const EXEC = 'alice-exec-token-0123456789';
/** alice again, with only container:list: refused when she starts an exec. */
const LIST = 'alice-list-token-0123456789';
/** alice with `*`: she may act on any container, bob's too (spec §12). */
const STAR = 'alice-star-token-0123456789';

const carriers: { name: string; url: (s: RunningServer) => string; options: (s: RunningServer) => RawConnectOptions }[] = [
  { name: 'WebSocket', url: (s) => s.wsUrl, options: () => ({ codec: 'msgpack' }) },
  { name: 'WebTransport HTTP/2', url: (s) => s.wtUrl!, options: (s) => ({ codec: 'msgpack', certHash: s.certHash, transport: 'h2' }) },
];

/**
 * Issue 31, finding 3, against the real engine: a resume token of alice's live `sh` (uid 0)
 * in the hands of a narrower token of hers must not let it type into the shell. A resume
 * passes the access check the exec's start passed (RSM-9): the operation's scope, and the
 * container's owner, with the identity that asks.
 */
for (const carrier of carriers) {
  describe(`resuming a live exec over ${carrier.name} is held to the exec's access`, () => {
    const docker = new DockerFixture();
    let server: RunningServer;
    /** A container callwire did not create: scopes alone decide. */
    let plain = '';
    /** One callwire created for bob: only bob, or a holder of `*`, may act on it. */
    let bobs = '';
    const peers: RawPeer[] = [];
    let calls = 0;

    beforeAll(async () => {
      server = await startServer({
        port: 0,
        webTransportPort: 0,
        http3: false,
        docker: docker.engine,
        tokens: [
          { token: EXEC, subject: 'alice', scopes: ['container:exec'] },
          { token: LIST, subject: 'alice', scopes: ['container:list'] },
          { token: STAR, subject: 'alice', scopes: ['*'] },
        ],
        limits: { maxResumeMs: 30_000 },
      });
      plain = await docker.container();
      bobs = await docker.container({ 'callwire.managed': 'true', 'callwire.owner': 'bob' });
    });
    afterAll(async () => {
      await Promise.all(peers.map((p) => p.close()));
      await server.close();
      await docker.cleanup();
    });

    async function peer(): Promise<RawPeer> {
      const p = await rawConnect(carrier.url(server), carrier.options(server));
      peers.push(p);
      return p;
    }

    /** An interactive `sh` (stdin streamed) as `token`, resumable; its token once offered. */
    async function shell(containerId: string, token: string): Promise<{ peer: RawPeer; id: string; token: string }> {
      const id = `sh-${++calls}`;
      const p = await peer();
      p.request(id, 'docker/container/exec', { containerId, cmd: ['sh'], stdin: 'stream' }, { credit: 1 << 20, resume: { grace_ms: 30_000 }, auth_token: token });
      const offer = await p.next((e) => e.id === id && (e.type === 'call.resumable' || e.type === 'call.error'), 15_000);
      expect(offer.type, JSON.stringify(offer.payload)).toBe('call.resumable');
      return { peer: p, id, token: (offer.payload as { token: string }).token };
    }

    /** Input numbers per call and connection side, as the caller counts them (RSM-7). */
    const sent = new Map<string, number>();
    const typeInto = (p: RawPeer, id: string, line: string, seq?: number): void => {
      const n = seq ?? (sent.get(id) ?? 0) + 1;
      sent.set(id, n);
      p.sendValue({ type: 'call.input', id, payload: { item: { data: new TextEncoder().encode(`${line}\n`) }, seq: n } });
    };

    /** Reads the call's stdout on `p` until it holds `text`; fails on an end first. */
    async function readUntil(p: RawPeer, id: string, text: string): Promise<string> {
      let out = '';
      while (!out.includes(text)) {
        const e = await p.next((f) => f.id === id && f.type !== 'call.credit', 15_000);
        expect(e.type, `waiting for ${JSON.stringify(text)}, got ${JSON.stringify(e.payload)}`).toBe('call.responded');
        out += (e.payload as { output: { text?: string } }).output.text ?? '';
      }
      return out;
    }

    const resume = (p: RawPeer, id: string, token: string, authToken: string): void =>
      p.sendValue({ type: 'call.resume', id, payload: { token, seq: 0, credit: 1 << 20, auth_token: authToken } });
    const answerTo = (p: RawPeer, id: string): Promise<Envelope> => p.next((e) => e.id === id && (e.type === 'call.resumed' || e.type === 'call.error'), 15_000);
    const shells = async (containerId: string): Promise<string[]> => (await docker.processes(containerId)).filter((args) => args === 'sh');

    it("a container:list token of alice's cannot resume her root shell: FORBIDDEN, its input never reaches the shell, and her connection keeps it, abort included", async () => {
      const a = await shell(plain, EXEC);
      typeInto(a.peer, a.id, 'id -u');
      expect(await readUntil(a.peer, a.id, '0\n')).toBe('0\n');
      const b = await peer();
      resume(b, a.id, a.token, LIST);
      expect(await answerTo(b, a.id)).toMatchObject({ type: 'call.error', payload: { code: 'FORBIDDEN', message: 'missing scope: container:exec' } });
      // What it types by the id is dropped (IN-4): its connection holds no such call.
      typeInto(b, a.id, 'echo typed-by-list', 2);
      typeInto(a.peer, a.id, 'echo still-hers', 2);
      const out = await readUntil(a.peer, a.id, 'still-hers\n');
      expect(out).not.toContain('typed-by-list');
      expect(b.framesFor(a.id).filter((e) => e.type === 'call.responded')).toEqual([]);
      expect(await shells(plain)).toHaveLength(1);
      a.peer.abort(a.id);
      await expect.poll(() => shells(plain), { timeout: 15_000, interval: 50, message: 'the shell killed by her abort' }).toEqual([]);
    });

    it("a token without `*` cannot resume a shell its `*` opened in bob's container (the owner check, §12): FORBIDDEN; with `*`, another connection takes it over and the first hears RESUMED_ELSEWHERE", async () => {
      const a = await shell(bobs, STAR);
      typeInto(a.peer, a.id, 'echo started');
      await readUntil(a.peer, a.id, 'started\n');
      const b = await peer();
      resume(b, a.id, a.token, EXEC);
      expect(await answerTo(b, a.id)).toMatchObject({ type: 'call.error', payload: { code: 'FORBIDDEN', message: expect.stringMatching(/belongs to another caller/) } });
      typeInto(a.peer, a.id, 'echo untouched');
      await readUntil(a.peer, a.id, 'untouched\n');

      const c = await peer();
      resume(c, a.id, a.token, STAR);
      const resumed = await answerTo(c, a.id);
      expect(resumed).toMatchObject({ type: 'call.resumed', payload: { input_seq: 2 } });
      expect(await a.peer.next((e) => e.id === a.id && e.type === 'call.error', 15_000)).toMatchObject({ payload: { code: 'RESUMED_ELSEWHERE', retryable: false } });
      typeInto(c, a.id, 'echo moved');
      expect(await readUntil(c, a.id, 'moved\n')).toContain('moved\n');
      // The old connection's abort is a no-op now: the shell lives until the one that has it aborts.
      a.peer.abort(a.id);
      typeInto(c, a.id, 'echo alive');
      await readUntil(c, a.id, 'alive\n');
      expect(await shells(bobs)).toEqual(['sh']);
      c.abort(a.id);
      await expect.poll(() => shells(bobs), { timeout: 15_000, interval: 50, message: 'the shell killed by the connection that has it' }).toEqual([]);
    });
  });
}
