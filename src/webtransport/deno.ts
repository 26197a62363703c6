import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { WtCloseInfo, WtSession, WtStream } from './types.js';

// Node has no QUIC: HTTP/3 goes through Deno, a pinned optional dependency whose binary
// comes from the npm registry. The server runs edge/quic-edge.ts; a client runs
// edge/quic-client.ts. Node's modules are imported inside the functions, so that the
// browser bundle, which never takes this path, does not need them.

/** The Deno binary of the pinned optional dependency, or why there is none. */
export async function findDeno(): Promise<{ path: string } | { reason: string }> {
  const [{ createRequire }, { existsSync }, { dirname, join }] = await Promise.all([import('node:module'), import('node:fs'), import('node:path')]);
  const require = createRequire(import.meta.url);
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
  for (const pkg of ['deno', `@deno/${process.platform}-${arch}-glibc`, `@deno/${process.platform}-${arch}`]) {
    try {
      const candidate = join(dirname(require.resolve(`${pkg}/package.json`)), 'deno');
      if (existsSync(candidate)) return { path: candidate };
    } catch {
      // not installed
    }
  }
  return { reason: 'the optional dependency deno (and its @deno/* binary) is not installed' };
}

/** An edge program of ours (edge/*.ts), found from the installed package. */
async function edgeProgram(name: EdgeName): Promise<string> {
  const { fileURLToPath } = await import('node:url');
  return fileURLToPath(new URL(`../../edge/${name}`, import.meta.url));
}

type EdgeName = 'quic-edge.ts' | 'quic-client.ts';

/** A running edge program. */
export interface EdgeProcess {
  readonly child: ChildProcess;
  /** Its first line on stdout, `{"ready":true,…}`: it is up. Rejects when it exits or says anything else first. */
  readonly ready: Promise<Record<string, unknown>>;
  /** The last of what it wrote to stderr, for an error or the log. */
  stderr(): string;
}

/**
 * Starts one of our edge programs under Deno, the one way both the server's edge and a
 * client's are run: reading and writing only `dir` (its config, its unix socket) and its
 * own source, with network access, and standard input a pipe that only this process
 * holds open: the edge ends when it closes, however this process ends (edge/parent.ts).
 */
export async function spawnEdge(name: EdgeName, dir: string, configFile: string): Promise<EdgeProcess> {
  const [{ spawn }, { dirname }, { createInterface }] = await Promise.all([import('node:child_process'), import('node:path'), import('node:readline')]);
  const deno = await findDeno();
  if ('reason' in deno) throw new Error(deno.reason);
  const program = await edgeProgram(name);
  const child = spawn(deno.path, ['run', '--quiet', '--no-prompt', '--no-config', '--no-lock', '--unstable-net', '--allow-net', `--allow-read=${dir},${dirname(program)}`, `--allow-write=${dir}`, program, configFile], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
  });
  // Never written: an edge that has exited makes no error here.
  child.stdin!.on('error', () => undefined);
  let errors = '';
  child.stderr!.on('data', (d: Buffer) => (errors = (errors + d.toString()).slice(-2000)));
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    const exited = (code: number | null, signal: string | null): void => reject(new Error(`${name} exited (${signal ?? code}) before it was ready: ${errors.trim()}`));
    child.once('exit', exited);
    createInterface({ input: child.stdout! }).once('line', (text) => {
      child.off('exit', exited);
      let message: Record<string, unknown> | undefined;
      try {
        message = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // said something else
      }
      if (message?.['ready'] === true) resolve(message);
      else reject(new Error(`${name} said: ${text}`));
    });
  });
  return { child, ready, stderr: () => errors.trim() };
}

interface ClientEdge {
  readonly socket: string;
  readonly secret: string;
}

let clientEdge: Promise<ClientEdge> | undefined;

/**
 * The process's one client edge: started on first use, shared by every HTTP/3 session
 * of this process, gone when the process exits (it ends with its standard input). It
 * does not keep the process alive; open sessions' sockets do.
 */
function startClientEdge(): Promise<ClientEdge> {
  clientEdge ??= (async () => {
    const [{ randomBytes }, fs, { tmpdir }, { join }] = await Promise.all([import('node:crypto'), import('node:fs'), import('node:os'), import('node:path')]);
    const dir = fs.mkdtempSync(join(tmpdir(), 'callwire-h3-client-'));
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    const secret = randomBytes(32).toString('hex');
    const socket = join(dir, 'bridge.sock');
    const configFile = join(dir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify({ dir, socket, secret }), { mode: 0o600 });
    const edge = await spawnEdge('quic-client.ts', dir, configFile).catch((error: unknown) => {
      throw new Error(`no HTTP/3 client: ${error instanceof Error ? error.message : String(error)}`);
    });
    const { child } = edge;
    await edge.ready.catch((error: unknown) => {
      child.kill();
      throw error;
    });
    child.once('exit', () => (clientEdge = undefined));
    // Neither the child nor its pipes keep this process alive.
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr] as { unref?: () => void }[]) s.unref?.();
    return { socket, secret };
  })();
  clientEdge.catch(() => (clientEdge = undefined));
  return clientEdge;
}

/**
 * A WebTransport session over HTTP/3, opened by the client edge and carried here over
 * its unix socket: the same shape as the library's session, so the SDK and the
 * conformance peer use it unchanged.
 */
export async function openHttp3Session(url: string, options: { certHash?: string | undefined; idleTimeoutMs?: number }): Promise<WtSession> {
  const { connect } = await import('node:net');
  const { Duplex } = await import('node:stream');
  const edge = await startClientEdge();
  const control = connect(edge.socket);
  control.setEncoding('utf8');
  control.write(`${JSON.stringify({ secret: edge.secret, kind: 'session', url, certHash: options.certHash?.replace(/:/g, ''), idleTimeoutMs: options.idleTimeoutMs ?? 30_000 })}\n`);
  const streams = new Map<number, Socket>();
  let id: string | undefined;
  let next = 0;
  let closeInfo: WtCloseInfo | undefined;
  let settleReady: { resolve: () => void; reject: (error: Error) => void } | undefined;
  const ready = new Promise<void>((resolve, reject) => (settleReady = { resolve, reject }));
  const closed = new Promise<WtCloseInfo | undefined>((resolve, reject) => {
    control.on('close', () => {
      settleReady?.reject(new Error('the HTTP/3 client edge closed the session request'));
      for (const s of streams.values()) s.destroy(new Error('session closed'));
      if (id === undefined) reject(new Error(closeInfo?.reason ?? 'no session'));
      else resolve(closeInfo);
    });
  });
  closed.catch(() => undefined);
  let pending = '';
  control.on('data', (chunk: string) => {
    pending += chunk;
    for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
      let message: { ok?: boolean; id?: string; reason?: string; reset?: number; closed?: number };
      try {
        message = JSON.parse(pending.slice(0, at)) as typeof message;
      } catch {
        // An edge that speaks nonsense loses its session, never this process.
        return void control.destroy();
      }
      pending = pending.slice(at + 1);
      if (message.ok === true) {
        id = message.id;
        settleReady?.resolve();
        settleReady = undefined;
      } else if (message.ok === false) {
        closeInfo = { closeCode: 0, reason: message.reason ?? 'refused' };
        settleReady?.reject(new Error(message.reason ?? 'refused'));
        settleReady = undefined;
      } else if (message.reset !== undefined) {
        streams.get(message.reset)?.destroy(new Error('the server reset the stream'));
      } else if (message.closed !== undefined) {
        closeInfo = { closeCode: message.closed, reason: message.reason ?? '' };
      }
    }
  });
  control.on('error', () => undefined);
  return {
    ready,
    closed,
    incomingBidirectionalStreams: new ReadableStream<WtStream>(),
    async createBidirectionalStream(): Promise<WtStream> {
      await ready;
      const n = next++;
      const socket = connect(edge.socket);
      socket.on('error', () => undefined);
      socket.write(`${JSON.stringify({ secret: edge.secret, kind: 'stream', session: id, n })}\n`);
      streams.set(n, socket);
      socket.once('close', () => streams.delete(n));
      // A web stream pair over the socket: its end() is the FIN, its backpressure the socket's.
      return Duplex.toWeb(socket) as unknown as WtStream;
    },
    close(info?: WtCloseInfo) {
      closeInfo = info ?? { closeCode: 0, reason: '' };
      control.end();
    },
  };
}
