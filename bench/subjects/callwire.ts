/** callwire's SDK over one transport (WebSocket, WebTransport over HTTP/2 or HTTP/3). */
import type { Client } from '../../src/client/index.js';
import type { Build } from '../built.js';
import type { Subject } from '../subject.js';

const ECHO_INPUT = { text: 'hello bench' };

export function callwireSubject(
  name: string,
  build: Build,
  client: Client,
  options: { peers: readonly string[]; processes?: Readonly<Record<string, number>> },
): Subject {
  return {
    name,
    ...options,
    echo: () => client.call('bench/echo', ECHO_INPUT),
    stream: async (items, itemBytes) => {
      let bytes = 0;
      for await (const item of client.iterate<{ data: Uint8Array }>('bench/stream', { items, itemBytes })) bytes += item.data.byteLength;
      return bytes;
    },
    exec: async (container, argv) => {
      let bytes = 0;
      const handle = build.client.exec(client, container, [...argv], { encoding: 'binary' });
      handle.output.subscribe((frame) => {
        if ('data' in frame && frame.stream === 'stdout') bytes += frame.data.byteLength;
      });
      await handle.result;
      return bytes;
    },
    close: () => client.close(),
  };
}
