import { readFileSync } from 'node:fs';
import { envelopes } from '../../src/protocol/index.js';
import { MUX_HEADER_BYTES, MUX_KIND, MUX_MAX_PAYLOAD_BYTES, MUX_STREAM_WINDOW_BYTES } from '../../src/webtransport/index.js';
import type { Rng } from './capsule-fuzz.js';
import { childPids, commandLine } from './proc.js';
import { requestBytes } from './raw-wt-h2.js';

/** The bridge socket and secret of the server edge that `parent` runs for `port` (from the edge's config file). */
export function edgeBridge(parent: number, port: number): { socket: string; secret: string } {
  for (const pid of childPids(parent)) {
    const argv = commandLine(pid);
    if (!argv.some((arg) => arg.endsWith('edge/h3-server-edge.ts'))) continue;
    const config = JSON.parse(readFileSync(argv.at(-1)!, 'utf8')) as Record<string, unknown>;
    if (config['port'] === port) return { socket: String(config['socket']), secret: String(config['secret']) };
  }
  throw new Error(`no server edge for port ${port} among the children of ${parent}`);
}

/** kind | stream id | length | payload (src/webtransport/bridge-mux.ts); `length` may lie. */
export function muxFrame(kind: number, id: number, payload: Uint8Array = new Uint8Array(0), length = payload.byteLength): Buffer {
  const head = Buffer.alloc(MUX_HEADER_BYTES);
  head.writeUInt8(kind, 0);
  head.writeUInt32BE(id >>> 0, 1);
  head.writeUInt32BE(length >>> 0, 5);
  return Buffer.concat([head, payload]);
}

const int = (rng: Rng, n: number): number => Math.floor(rng() * n);
const u32 = (n: number): Buffer => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n >>> 0);
  return out;
};

/**
 * What an edge could send the server, as one session's generator: mostly frames a real
 * edge sends (opens in order, calls, FINs, resets, credit), some that break a rule (a stream
 * never opened, data over its window or after its end, a credit over the window or without
 * its amount, an open out of order or with a payload, an unknown kind, a length past the
 * largest frame), and some raw bytes. Each call gives one frame.
 */
export class BridgeFrameSource {
  private highest = -1;

  constructor(private readonly rng: Rng) {}

  next(): Buffer {
    const rng = this.rng;
    const open = (): number => (this.highest < 0 ? 0 : int(rng, this.highest + 1));
    const r = int(rng, 20);
    if (r < 4 || this.highest < 0) return muxFrame(MUX_KIND.open, ++this.highest);
    if (r < 8) return muxFrame(MUX_KIND.data, open(), requestBytes(envelopes.requested(`b${int(rng, 1000)}`, { operationId: 'test/echo', input: { text: 'fuzz' } })));
    if (r < 10) return muxFrame(MUX_KIND.fin, open());
    if (r < 11) return muxFrame(MUX_KIND.reset, open());
    if (r < 12) return muxFrame(MUX_KIND.credit, open(), u32(int(rng, 64 * 1024)));
    if (r < 13) return muxFrame(MUX_KIND.data, open(), Buffer.alloc(int(rng, 2000), int(rng, 256)));
    // Rule breakers from here on: each ends its session, or is dropped.
    switch (int(rng, 12)) {
      case 0:
        return muxFrame(MUX_KIND.data, this.highest + 1 + int(rng, 1000), Buffer.alloc(4));
      case 1:
        return muxFrame(MUX_KIND.credit, open(), u32(MUX_STREAM_WINDOW_BYTES + 1 + int(rng, 1 << 20)));
      case 2:
        return muxFrame(MUX_KIND.credit, open(), Buffer.alloc(int(rng, 4)));
      case 3:
        return muxFrame(MUX_KIND.open, this.highest + 2 + int(rng, 5));
      case 4:
        return muxFrame(MUX_KIND.open, this.highest + 1, Buffer.alloc(1 + int(rng, 8)));
      case 5:
        return muxFrame(rng() < 0.5 ? 0 : 8 + int(rng, 248), open(), Buffer.alloc(int(rng, 16)));
      case 6:
        return muxFrame(MUX_KIND.data, open(), Buffer.alloc(4), MUX_MAX_PAYLOAD_BYTES + 1 + int(rng, 2 ** 31));
      case 7:
        return muxFrame(MUX_KIND.close, 0, Buffer.alloc(int(rng, 8)));
      case 8:
        return muxFrame(MUX_KIND.lost, int(rng, 3));
      case 9:
        return Buffer.concat([muxFrame(MUX_KIND.fin, open()), muxFrame(MUX_KIND.fin, open())]);
      case 10: {
        const frame = muxFrame(MUX_KIND.data, open(), Buffer.alloc(int(rng, 64)));
        const at = int(rng, frame.byteLength);
        frame[at] = frame[at]! ^ (1 << int(rng, 8));
        return frame;
      }
      default:
        return Buffer.from(Array.from({ length: 1 + int(rng, 32) }, () => int(rng, 256)));
    }
  }
}
