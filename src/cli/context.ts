import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { connect, RpcError, type Client } from '../client-node/index.js';
import { clientGarbageCollection } from './node-flags.js';
import { codecs } from '../protocol/index.js';
import { CallerInputError } from '../outcome/index.js';

export interface GlobalFlags {
  url: string;
  token?: string;
  certHash?: string;
  timeout?: string;
  json?: boolean;
  quiet?: boolean;
  codec: 'msgpack' | 'json';
  transport: 'auto' | 'h3' | 'h2' | 'ws';
}

export function globalFlags(command: Command): GlobalFlags {
  return command.optsWithGlobals<GlobalFlags>();
}

/** The token comes from --token or CALLWIRE_TOKEN; it is never printed or passed on. */
export function tokenOf(flags: GlobalFlags): string | undefined {
  const token = flags.token ?? process.env['CALLWIRE_TOKEN'];
  return token && token.length > 0 ? token : undefined;
}

/**
 * The WebTransport carrier `--transport` asks for, checked against the URL's scheme:
 * `ws` needs ws:// or wss://, `h3` and `h2` need https://.
 */
export function carrierOf(flags: GlobalFlags, url = flags.url): 'auto' | 'h3' | 'h2' {
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    return 'auto'; // the connection reports the bad URL
  }
  const websocket = scheme === 'ws:' || scheme === 'wss:' || scheme === 'ws+unix:';
  if (flags.transport === 'ws' && !websocket) throw new CallerInputError(`--transport ws needs a ws://, wss:// or ws+unix:// URL, not ${scheme}//`);
  if ((flags.transport === 'h3' || flags.transport === 'h2') && scheme !== 'https:') throw new CallerInputError(`--transport ${flags.transport} needs an https:// URL, not ${scheme}//`);
  return flags.transport === 'ws' ? 'auto' : flags.transport;
}

/** Connects, unless `signal` (SIGINT/SIGTERM) fires first: then the attempt is closed and it rejects with CANCELLED. */
export async function connectFrom(flags: GlobalFlags, signal?: AbortSignal, resume?: { graceMs: number }): Promise<Client> {
  clientGarbageCollection();
  const token = tokenOf(flags);
  try {
    return await connect(flags.url, {
      ...(resume ? { resume } : {}),
      codec: flags.codec,
      ...(token ? { token } : {}),
      ...(flags.certHash ? { certHash: flags.certHash } : {}),
      transport: carrierOf(flags),
      ...(signal ? { signal } : {}),
      connectTimeoutMs: 10_000,
    });
  } catch (error) {
    if (error instanceof RpcError && error.code === 'CANCELLED') throw new RpcError('CANCELLED', 'cancelled by a signal while connecting');
    throw error;
  }
}

/**
 * `work`, or CANCELLED as soon as `signal` fires (also when it fired already): a
 * signal is honoured at every point, not only once a call is running.
 */
export function unlessCancelled<T>(work: Promise<T>, signal: AbortSignal, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new RpcError('CANCELLED', `cancelled by a signal while ${what}`));
    // Settling twice is a no-op: whichever comes first wins, and a late result is dropped.
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** "2s", "500ms", "1.5m", "1h", or a plain number of seconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new CallerInputError(`${flag} must be a duration like 500ms, 2s, 1m or 1h, not "${text}"`);
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  const ms = Math.round(n * unit);
  if (ms <= 0) throw new CallerInputError(`${flag} must be greater than zero`);
  return ms;
}

export function parseCount(text: string, flag: string, min = 1): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < min) throw new CallerInputError(`${flag} must be a whole number of at least ${min}, not "${text}"`);
  return n;
}

/** `--input JSON`, `--input @file`, or JSON on stdin when stdin is not a terminal. */
export async function readInput(input: string | undefined): Promise<unknown> {
  let text: string;
  let where: string;
  if (input === undefined) {
    if (process.stdin.isTTY) return null;
    text = (await readStdin()).toString('utf8');
    where = 'stdin';
    if (text.trim() === '') return null;
  } else if (input.startsWith('@')) {
    where = input.slice(1);
    try {
      text = readFileSync(where, 'utf8');
    } catch (error) {
      throw new CallerInputError(`cannot read --input file ${where}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  } else {
    text = input;
    where = '--input';
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CallerInputError(`${where} is not valid JSON: ${(error as Error).message}`);
  }
}

export async function readStdin(limitBytes = 64 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    total += chunk.byteLength;
    if (total > limitBytes) throw new CallerInputError(`stdin is larger than ${limitBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** JSON for stdout: bytes as {"$base64"}, as the JSON codec writes them. */
export function toJsonLine(value: unknown): string {
  return utf8.decode(codecs.json.encode(value));
}

const utf8 = new TextDecoder();

/** One write attempt; resolves false when stdout is gone (a closed pipe). */
export function writeOut(text: string): Promise<boolean> {
  return new Promise((resolve) => {
    process.stdout.write(text, (error) => resolve(!error));
  });
}

export function writeErr(line: string): void {
  process.stderr.write(`${line}\n`);
}
