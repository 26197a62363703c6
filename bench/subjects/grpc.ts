/** grpc-js: the same messages, msgpack-serialised, to the gRPC server of bench/peers.ts. */
import * as grpc from '@grpc/grpc-js';
import { grpcService } from '../peers.js';
import { GRPC } from '../names.js';
import type { Subject } from '../subject.js';

interface BenchClient {
  echo(request: unknown, callback: (error: Error | null, response: unknown) => void): void;
  stream(request: unknown): NodeJS.ReadableStream;
  close(): void;
}

export function grpcSubject(port: number, peers: readonly string[]): Subject {
  const Client = grpc.makeGenericClientConstructor(grpcService, 'Bench');
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as BenchClient;
  return {
    name: GRPC,
    peers,
    echo: () => new Promise((resolve, reject) => client.echo({ text: 'hello bench' }, (e, r) => (e ? reject(e) : resolve(r)))),
    stream: (items, itemBytes) =>
      new Promise((resolve, reject) => {
        let bytes = 0;
        const call = client.stream({ items, itemBytes });
        call.on('data', (m: { data: Uint8Array }) => (bytes += m.data.byteLength));
        call.on('end', () => resolve(bytes));
        call.on('error', reject);
      }),
    close: async () => client.close(),
  };
}
