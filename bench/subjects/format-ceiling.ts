/**
 * The format's ceiling (bench/peers.ts): callwire's msgpack envelopes over the raw
 * server, each answer decoded and matched to its call by id, nothing more. Its ratio to
 * raw `ws` is what the wire format costs; callwire's ratio to it, callwire's machinery.
 */
import { protocol } from '../built.js';
import { FORMAT_CEILING } from '../names.js';
import type { Subject } from '../subject.js';
import { openWs } from './open-ws.js';

type Frame = { type: string; id: string; payload: { output?: unknown } };

export async function formatCeilingSubject(port: number, peers: readonly string[]): Promise<Subject> {
  const { codecs, envelopes } = protocol;
  const { ws, send } = await openWs(port);
  const waiting = new Map<string, (output: unknown) => void>();
  let onStream: ((frame: Frame) => void) | undefined;
  ws.on('message', (data: Buffer) => {
    const frame = codecs.msgpack.decode(data) as Frame;
    if (onStream) return onStream(frame);
    const done = waiting.get(frame.id);
    waiting.delete(frame.id);
    done?.(frame.payload.output);
  });
  const input = { text: 'hello bench' };
  let calls = 0;
  return {
    name: FORMAT_CEILING,
    peers,
    echo: () =>
      new Promise((resolve) => {
        const id = `f-${(++calls).toString(36)}`;
        waiting.set(id, resolve);
        send(codecs.msgpack.encode(envelopes.requested(id, { operationId: 'bench/echo', input })));
      }),
    stream: (items, itemBytes) =>
      new Promise((resolve) => {
        let bytes = 0;
        onStream = (frame) => {
          if (frame.type !== 'call.responded') {
            onStream = undefined;
            resolve(bytes);
          } else bytes += (frame.payload.output as { data: Uint8Array }).data.byteLength;
        };
        ws.send(codecs.msgpack.encode(envelopes.requested(`s-${(++calls).toString(36)}`, { operationId: 'bench/stream', input: { items, itemBytes } })));
      }),
    close: async () => ws.close(),
  };
}
