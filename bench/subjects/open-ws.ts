/** A plain `ws` client to the raw server of bench/peers.ts, its writes batched as callwire's client batches. */
import WebSocket from 'ws';
import { socketOf, writeBatcher } from '../write-batch.js';

export interface OpenWs {
  readonly ws: WebSocket;
  /** Sends `data` through the write batcher. */
  readonly send: (data: Uint8Array) => void;
}

export async function openWs(port: number): Promise<OpenWs> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const batched = writeBatcher(socketOf(ws));
  return { ws, send: (data) => batched(data.byteLength, () => ws.send(data)) };
}
