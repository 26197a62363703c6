import { createHash, type Hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { pathStat, type ArchiveTerminalFrame, type PathStat } from '../../contracts/index.js';
import { RpcError } from '../../protocol/index.js';
import { containerError } from './errors.js';

/**
 * What the archive operations share (spec §12, "Archives"): the engine's request for a
 * path, its path stat header, its errors, and the terminal frame's count and digest.
 */

/** The engine's archive endpoint for a container checked by ownership, named by its full id (DOCKER-1). */
export function archiveRequest(containerId: string, path: string, query: Record<string, boolean> = {}) {
  // The path is a query parameter, percent-encoded by docker-modem, never a part of the URL's path (ARC-1).
  return { path: `/containers/${encodeURIComponent(containerId)}/archive`, query: { path, ...query } };
}

const STAT_HEADER = 'x-docker-container-path-stat';

/** ARC-3: the engine's path stat, held to its schema; anything else ends the call. */
export function statOf(response: IncomingMessage): PathStat {
  const header = response.headers[STAT_HEADER];
  if (typeof header !== 'string') throw new RpcError('DOCKER_ERROR', "the engine's answer has no path stat (X-Docker-Container-Path-Stat)", { details: {} });
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    throw new RpcError('DOCKER_ERROR', "the engine's path stat is not base64 JSON", { details: {} });
  }
  const stat = pathStat.safeParse(parsed);
  if (!stat.success) throw new RpcError('DOCKER_ERROR', `the engine's path stat is not one: ${stat.error.issues[0]?.message ?? 'wrong shape'}`, { details: {} });
  return stat.data;
}

/**
 * ARC-2: the engine's refusal about `path` in a container the ownership check found.
 * A 404 then is the path's (the engine says "Could not find the file … in container
 * …"), unless the engine says the container itself went meanwhile.
 */
export function archiveError(error: unknown, containerId: string, path: string): RpcError {
  if (error instanceof RpcError) return error;
  const e = error as { statusCode?: number; code?: string; json?: { message?: string } | null };
  if (e.statusCode === 404 && !/^no such container/i.test(e.json?.message ?? '')) {
    return new RpcError('PATH_NOT_FOUND', `no such file or directory in container ${containerId}: ${path}`, { details: { containerId, path } });
  }
  // Node's HTTP parser refused the engine's answer: headers over its bound (16 KiB), or not HTTP (ARC-3).
  if (e.statusCode === undefined && e.code?.startsWith('HPE_')) {
    return new RpcError('DOCKER_ERROR', `the engine's answer is not HTTP this server reads (${e.code}: headers are bounded to 16 KiB)`, { details: {} });
  }
  return containerError(error, containerId);
}

/** ARC-6: the tar bytes' count and SHA-256, as they pass. */
export class TarDigest {
  private bytes = 0;
  private readonly hash: Hash = createHash('sha256');

  add(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    this.hash.update(chunk);
  }

  terminal(): ArchiveTerminalFrame {
    return { terminal: true, bytes: this.bytes, sha256: this.hash.digest('hex') };
  }
}
