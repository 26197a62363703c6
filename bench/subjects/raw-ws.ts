/**
 * The raw ceiling (bench/peers.ts): `ws` echoing the same buffer, or streaming one again
 * and again, to a client that only counts bytes. No envelope format reaches it.
 */
import { RAW_WS } from '../names.js';
import type { Subject } from '../subject.js';
import { openWs } from './open-ws.js';

export async function rawWsSubject(port: number): Promise<Subject> {
  const { ws, send } = await openWs(port);
  const waiting: ((data: Buffer) => void)[] = [];
  let onStream: ((data: Buffer) => void) | undefined;
  ws.on('message', (data: Buffer) => (onStream ? onStream(data) : waiting.shift()?.(data)));
  const message = Buffer.from('hello bench');
  return {
    name: RAW_WS,
    peers: [],
    echo: () =>
      new Promise((resolve) => {
        waiting.push(resolve);
        send(message);
      }),
    stream: (items, itemBytes) =>
      new Promise((resolve) => {
        let bytes = 0;
        onStream = (data) => {
          if (data.byteLength === 1 && data[0] === 0xff) {
            onStream = undefined;
            resolve(bytes);
          } else bytes += data.byteLength;
        };
        const request = Buffer.alloc(9);
        request[0] = 0x01;
        request.writeUInt32BE(items, 1);
        request.writeUInt32BE(itemBytes, 5);
        ws.send(request);
      }),
    close: async () => ws.close(),
  };
}
