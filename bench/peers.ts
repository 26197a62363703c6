import * as grpc from '@grpc/grpc-js';
import { Packr } from 'msgpackr';
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { protocol } from './built.js';
import { writeBatcher } from './write-batch.js';

const packr = new Packr({ useRecords: false });
const serialize = (value: unknown): Buffer => packr.pack(value);
const deserialize = (bytes: Buffer): unknown => packr.unpack(bytes);

/** gRPC with the same messages, msgpack-serialised: an equivalent service, not a different one. */
export const grpcService: grpc.ServiceDefinition = {
  echo: { path: '/bench.Bench/Echo', requestStream: false, responseStream: false, requestSerialize: serialize, requestDeserialize: deserialize, responseSerialize: serialize, responseDeserialize: deserialize },
  stream: { path: '/bench.Bench/Stream', requestStream: false, responseStream: true, requestSerialize: serialize, requestDeserialize: deserialize, responseSerialize: serialize, responseDeserialize: deserialize },
};

export async function startGrpc(): Promise<{ port: number; stop: () => Promise<void> }> {
  const server = new grpc.Server();
  server.addService(grpcService, {
    echo: (call: grpc.ServerUnaryCall<{ text: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => callback(null, call.request),
    stream: async (call: grpc.ServerWritableStream<{ items: number; itemBytes: number }, unknown>) => {
      const data = new Uint8Array(call.request.itemBytes).fill(7);
      for (let i = 0; i < call.request.items && !call.cancelled; i++) {
        if (!call.write({ data })) await new Promise((resolve) => call.once('drain', resolve));
      }
      call.end();
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, p) => (error ? reject(error) : resolve(p))),
  );
  return { port, stop: () => new Promise((resolve) => server.tryShutdown(() => resolve())) };
}

const { codecs, envelopes, outputFrameEncoder } = protocol;
const msgpack = codecs.msgpack;
/** Past this many bytes waiting in the socket, a stream waits for its send to finish. */
const HIGH_WATER_BYTES = 1024 * 1024;
/** An envelope {type, id, payload} starts with msgpack's map of three. */
const FIXMAP_3 = 0x83;

/**
 * The format's ceiling: the same ws server answering callwire's own envelopes with
 * nothing but what the wire format asks for, a msgpack decode of each request and an
 * encode of each answer (callwire's codec, its output-frame encoder, its batching). No
 * validation, no operation table, no credit, no cancellation: the least any server
 * speaking this format does, so callwire's distance to it is its own machinery's cost,
 * and its distance to the raw ceiling is the format's.
 */
async function envelopeFormat(data: Buffer, send: (data: Uint8Array, done?: () => void) => void, buffered: () => number): Promise<void> {
  const request = msgpack.decode(data) as { id: string; payload: { operationId: string; input: { text?: string; items?: number; itemBytes?: number } } };
  const { id, payload } = request;
  if (payload.operationId === 'bench/echo') return send(msgpack.encode(envelopes.responded(id, payload.input)));
  const item = { data: new Uint8Array(payload.input.itemBytes!).fill(7) };
  const encode = outputFrameEncoder(msgpack, id);
  for (let i = 0; i < payload.input.items!; i++) {
    const frame = encode(item);
    if (buffered() > HIGH_WATER_BYTES) await new Promise<void>((resolve) => send(frame, resolve));
    else send(frame);
  }
  send(msgpack.encode(envelopes.completed(id)));
}

/**
 * The HTTP ceiling: a bare node:http server that reads the JSON body and answers it
 * inside a JSON object, the least an HTTP call can cost on Node.
 */
export async function startRawHttp(): Promise<{ port: number; stop: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = `${JSON.stringify({ output: JSON.parse(Buffer.concat(chunks).toString()) as unknown })}\n`;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { port, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}

/**
 * The ceiling: a raw ws server. Unary = echo each message back; a message starting
 * with 0x01 asks for a stream of `items` messages of `itemBytes`.
 */
export async function startRawWs(): Promise<{ port: number; stop: () => Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
  wss.on('connection', (ws, req) => {
    const batched = writeBatcher(req.socket);
    const send = (data: Uint8Array, done?: () => void): void => batched(data.byteLength, () => ws.send(data, done));
    ws.on('message', async (data: Buffer) => {
      if (data[0] === FIXMAP_3) return envelopeFormat(data, send, () => ws.bufferedAmount);
      if (data[0] !== 0x01) return send(data);
      const view = new DataView(data.buffer, data.byteOffset);
      const items = view.getUint32(1);
      const chunk = Buffer.alloc(view.getUint32(5), 7);
      for (let i = 0; i < items; i++) {
        if (ws.bufferedAmount > HIGH_WATER_BYTES) await new Promise<void>((resolve) => send(chunk, resolve));
        else send(chunk);
      }
      send(Buffer.from([0xff]));
    });
  });
  await new Promise((resolve) => wss.once('listening', resolve));
  const port = (wss.address() as { port: number }).port;
  return { port, stop: () => new Promise((resolve) => wss.close(() => resolve())) };
}
