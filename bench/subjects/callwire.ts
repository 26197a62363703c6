/** callwire's SDK over one transport (WebSocket, WebTransport over HTTP/2 or HTTP/3). */
import type { Client } from '../../src/client/index.js';
import type { Build } from '../built.js';
import type { Subject } from '../subject.js';

export const ECHO_INPUT = { text: 'hello bench' };

/** `bench/stream` through the SDK's async iterator; resolves with the bytes received. */
const streamOf =
  (client: Client) =>
  async (items: number, itemBytes: number): Promise<number> => {
    let bytes = 0;
    for await (const item of client.iterate<{ data: Uint8Array }>('bench/stream', { items, itemBytes })) bytes += item.data.byteLength;
    return bytes;
  };

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
    stream: streamOf(client),
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

/**
 * The same SDK streams on a client made with `resume` (spec §4.9), so each asks to outlive
 * a lost connection: numbered output, kept until acknowledged. Streams only: it is there
 * for the streaming rows, beside the plain client's.
 */
export function resumableStreamSubject(name: string, client: Client, peers: readonly string[]): Subject {
  return { name, peers, stream: streamOf(client), close: () => client.close() };
}
