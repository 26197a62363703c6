import type { ChildProcess } from 'node:child_process';
import { BRIDGE_LINE_MAX_BYTES, bridgeLine, bridgeMessages, parseBridgeLine, type BridgeMessage } from './bridge-protocol.js';
import { BridgeMux } from './bridge-mux.js';
import type { WtCloseInfo, WtSession, WtStream } from './types.js';

// Node has no QUIC: HTTP/3 goes through Deno, a pinned optional dependency whose binary
// comes from the npm registry. The server runs edge/h3-server-edge.ts; a client runs
// edge/h3-client-edge.ts; both speak the bridge of ./bridge-protocol.ts with it. Node's modules are imported inside the functions, so that the
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

type EdgeName = 'h3-server-edge.ts' | 'h3-client-edge.ts';

/** A running edge program. */
export interface EdgeProcess {
  readonly child: ChildProcess;
  /** Its first line on stdout, `ready`: it is up. Rejects when it exits or says anything else first. */
  readonly ready: Promise<BridgeMessage<'ready'>>;
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
  const child = spawn(deno.path, ['run', '--quiet', '--no-prompt', '--no-config', '--no-lock', '--sloppy-imports', '--unstable-net', '--allow-net', `--allow-read=${dir},${dirname(program)}`, `--allow-write=${dir}`, program, configFile], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
  });
  // Never written: an edge that has exited makes no error here.
  child.stdin!.on('error', () => undefined);
  let errors = '';
  child.stderr!.on('data', (d: Buffer) => (errors = (errors + d.toString()).slice(-2000)));
  const ready = new Promise<BridgeMessage<'ready'>>((resolve, reject) => {
    const exited = (code: number | null, signal: string | null): void => reject(new Error(`${name} exited (${signal ?? code}) before it was ready: ${errors.trim()}`));
    child.once('exit', exited);
    createInterface({ input: child.stdout! }).once('line', (text) => {
      child.off('exit', exited);
      try {
        resolve(parseBridgeLine(text, ['ready']));
      } catch {
        reject(new Error(`${name} said: ${text}`));
      }
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
    const config: BridgeMessage<'clientEdgeConfig'> = { type: bridgeMessages.clientEdgeConfig.type, dir, socket, secret };
    fs.writeFileSync(configFile, JSON.stringify(config), { mode: 0o600 });
    const edge = await spawnEdge('h3-client-edge.ts', dir, configFile).catch((error: unknown) => {
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
 * A WebTransport session over HTTP/3, opened by the client edge and carried here over one
 * unix connection, its streams multiplexed on it (./bridge-mux.ts): the same shape as the
 * library's session, so the SDK and the conformance peer use it unchanged.
 */
export async function openHttp3Session(url: string, options: { certHash?: string | undefined; idleTimeoutMs?: number }): Promise<WtSession> {
  const { connect } = await import('node:net');
  const edge = await startClientEdge();
  const control = connect(edge.socket);
  control.setNoDelay?.(true);
  const certHash = options.certHash?.replace(/:/g, '').toLowerCase();
  control.write(bridgeLine<'session'>({ type: 'session', secret: edge.secret, url, ...(certHash ? { certHash } : {}), idleTimeoutMs: options.idleTimeoutMs ?? 30_000 }));
  let accepted = false;
  let closeInfo: WtCloseInfo | undefined;
  let settleReady: { resolve: () => void; reject: (error: Error) => void } | undefined;
  const ready = new Promise<void>((resolve, reject) => (settleReady = { resolve, reject }));
  const mux = new BridgeMux({
    opens: true,
    write: (parts) => {
      control.cork();
      for (const part of parts) control.write(part);
      control.uncork();
    },
    onClose: (closeCode, reason) => (closeInfo = { closeCode, reason }),
    // An edge that breaks the framing loses the session, never this process.
    onViolation: () => control.destroy(),
  });
  const closed = new Promise<WtCloseInfo | undefined>((resolve, reject) => {
    control.on('close', () => {
      settleReady?.reject(new Error('the HTTP/3 client edge closed the session request'));
      mux.end('session closed');
      if (!accepted) reject(new Error(closeInfo?.reason ?? 'no session'));
      else resolve(closeInfo);
    });
  });
  closed.catch(() => undefined);
  // The edge answers `accepted` or `refused` in one line; after `accepted`, the session's frames.
  let head = Buffer.alloc(0);
  control.on('data', (chunk: Buffer) => {
    if (accepted) return mux.receive(chunk);
    head = Buffer.concat([head, chunk]);
    const at = head.indexOf(10);
    if (at < 0) {
      if (head.byteLength > BRIDGE_LINE_MAX_BYTES) control.destroy();
      return;
    }
    let message: BridgeMessage<'accepted' | 'refused'>;
    try {
      message = parseBridgeLine(head.subarray(0, at).toString('utf8'), ['accepted', 'refused']);
    } catch {
      return void control.destroy();
    }
    if (message.type === 'refused') {
      closeInfo = { closeCode: 0, reason: message.reason };
      settleReady?.reject(new Error(message.reason));
      settleReady = undefined;
      return;
    }
    accepted = true;
    settleReady?.resolve();
    settleReady = undefined;
    if (head.byteLength > at + 1) mux.receive(head.subarray(at + 1));
  });
  control.on('error', () => undefined);
  return {
    ready,
    closed,
    incomingBidirectionalStreams: new ReadableStream<WtStream>(),
    async createBidirectionalStream(): Promise<WtStream> {
      await ready;
      return mux.open();
    },
    close(info?: WtCloseInfo) {
      const code = info?.closeCode ?? 0;
      const reason = (info?.reason ?? '').slice(0, 1024);
      closeInfo = { closeCode: code, reason };
      if (accepted) mux.close(code, reason);
      control.end();
    },
  };
}
