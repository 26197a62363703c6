import { createHash } from 'node:crypto';
import { z } from 'zod';
import { archiveGetContract, archivePutContract, archiveStatContract, containerPath, pathStat, type OutputOf } from '../../src/contracts/index.js';
import { defineOperation } from '../../src/dispatcher/index.js';
import { startServer, type RunningServer } from '../../src/server/index.js';

type GetItem = OutputOf<typeof archiveGetContract>;
type PutItem = OutputOf<typeof archivePutContract>;

const MODE_DIR = 2 ** 31;

/** What a "container" of the crafted server answers for its one path. */
export interface CraftedContainer {
  /** The stat it reports (a directory by default). */
  readonly dir?: boolean;
  /** The tar stream a get sends, in 64 KiB items: a Buffer, or chunks made as they are taken. */
  readonly tar?: Buffer | (() => AsyncIterable<Buffer>);
  /** The terminal frame instead of the honest one (the tar's own count and sha256). */
  readonly terminal?: { bytes: number; sha256: string };
  /** A get's items exactly as sent, in any order, instead of stat, the tar, then the end. */
  readonly items?: () => AsyncIterable<GetItem>;
  /** A put's answer, given the count and sha256 of the tar bytes it took; by default the honest end. */
  readonly putAnswer?: (received: { bytes: number; sha256: string }) => AsyncIterable<PutItem>;
}

/**
 * A server whose `docker/container/archive/{stat,get,put}` answer as a compromised agent
 * or a fake engine would (docs/security.md "Copies"): each container name is a scenario,
 * and the bytes and items are whatever the test crafts, so only the client's own checks
 * stand between them and the disk. A put's input is read whole and only counted.
 */
export class CraftedArchiveServer {
  private constructor(
    readonly server: RunningServer,
    private readonly containers: Map<string, CraftedContainer>,
  ) {}

  static async start(): Promise<CraftedArchiveServer> {
    const containers = new Map<string, CraftedContainer>();
    const served = (containerId: string): CraftedContainer => {
      const found = containers.get(containerId);
      if (!found) throw new Error(`no scenario named ${containerId}`);
      return found;
    };
    const stat = (dir: boolean) => ({ name: 'x', size: 0, mode: dir ? MODE_DIR + 0o755 : 0o644, mtime: '2026-01-01T00:00:00Z', linkTarget: '' });
    const input = z.object({ containerId: z.string(), path: containerPath });
    const server = await startServer({
      port: 0,
      webTransportPort: 0,
      docker: false,
      http3: false,
      operations: [
        defineOperation({ name: archiveStatContract.name, kind: 'query', input, output: pathStat, handler: ({ containerId }) => stat(served(containerId).dir ?? true) }),
        defineOperation({
          name: archiveGetContract.name,
          kind: 'subscription',
          input,
          output: archiveGetContract.output,
          handler: ({ containerId }) =>
            (async function* (): AsyncGenerator<GetItem> {
              const scenario = served(containerId);
              if (scenario.items) return yield* scenario.items();
              yield { stat: stat(scenario.dir ?? true) };
              const hash = createHash('sha256');
              let bytes = 0;
              const chunks = typeof scenario.tar === 'function' ? scenario.tar() : slices(scenario.tar ?? Buffer.alloc(0));
              for await (const chunk of chunks) {
                hash.update(chunk);
                bytes += chunk.byteLength;
                yield { data: chunk };
              }
              yield { terminal: true as const, ...(scenario.terminal ?? { bytes, sha256: hash.digest('hex') }) };
            })(),
        }),
        defineOperation({
          name: archivePutContract.name,
          kind: 'subscription',
          input: archivePutContract.input,
          inputStream: archivePutContract.inputStream!,
          output: archivePutContract.output,
          handler: ({ containerId }, ctx) =>
            (async function* (): AsyncGenerator<PutItem> {
              const scenario = served(containerId);
              const hash = createHash('sha256');
              let bytes = 0;
              for await (const item of ctx.input as AsyncIterable<{ data: Uint8Array }>) {
                hash.update(item.data);
                bytes += item.data.byteLength;
              }
              const received = { bytes, sha256: hash.digest('hex') };
              if (scenario.putAnswer) return yield* scenario.putAnswer(received);
              yield { terminal: true as const, ...received };
            })(),
        }),
      ],
    });
    return new CraftedArchiveServer(server, containers);
  }

  get wsUrl(): string {
    return this.server.wsUrl;
  }

  /** `name` answers as `container` says from now on. */
  serve(name: string, container: CraftedContainer): void {
    this.containers.set(name, container);
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

async function* slices(tar: Buffer): AsyncGenerator<Buffer> {
  for (let at = 0; at < tar.byteLength; at += 64 * 1024) yield tar.subarray(at, at + 64 * 1024);
}
