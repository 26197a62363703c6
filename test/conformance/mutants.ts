import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { defineOperation, deriveContext, type Operation } from '../../src/dispatcher/index.js';
import { codecForSubprotocol, codecs, subprotocols } from '../../src/protocol/index.js';

/**
 * Broken servers made from the real one, for the scenarios that must flag them: each
 * reproduces on the wire (or in an operation) one bug a scenario claims to catch.
 */

export interface Listening {
  readonly url: string;
  close(): Promise<void>;
}

type Frame = { type?: string; id?: string; payload?: Record<string, unknown> };

/** What a mutating proxy does to each frame: the frames to pass on instead (toward the caller, or the callee). */
export interface Rewrite {
  toCaller?(frame: Frame, seen: Map<string, Frame>): Frame[];
  /** Frames to send the caller when it sends `frame` (the callee's reply is not awaited). */
  onCaller?(frame: Frame, size: number): Frame[];
  /** How long the caller's connection outlives the callee's close. */
  closeLaterMs?: number;
}

/**
 * A WebSocket proxy in front of `upstream` that decodes every frame with the
 * connection's codec and rewrites it: the real server, with one wire-level bug.
 * `seen` holds each call's request, so a rewrite can tell what the call asked for.
 */
export function mutatingProxy(upstream: string, rewrite: Rewrite): Promise<Listening> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', handleProtocols: (offered) => [...offered][0] ?? false });
  wss.on('connection', (caller, req) => {
    const codec = codecForSubprotocol(caller.protocol) ?? codecs.msgpack;
    const auth = req.headers.authorization;
    // Pings pass through both ways unanswered by the proxy: a silent caller stays silent (§5.5).
    const callee = new WebSocket(upstream, [subprotocols[codec.name]], { autoPong: false, ...(auth ? { headers: { authorization: auth } } : {}) });
    callee.on('ping', (data) => caller.ping(data));
    caller.on('pong', (data) => callee.pong(data));
    const seen = new Map<string, Frame>();
    const early: Buffer[] = [];
    const toCaller = (frame: Frame): void => caller.send(codec.encode(frame), { binary: true });
    caller.on('message', (data: Buffer) => {
      const frame = codec.decode(new Uint8Array(data)) as Frame;
      if (frame.type === 'call.requested' && frame.id !== undefined) seen.set(frame.id, frame);
      for (const extra of rewrite.onCaller?.(frame, data.byteLength) ?? []) toCaller(extra);
      if (callee.readyState === WebSocket.OPEN) callee.send(data);
      else early.push(data);
    });
    callee.on('open', () => {
      for (const data of early.splice(0)) callee.send(data);
    });
    callee.on('message', (data: Buffer) => {
      const frame = codec.decode(new Uint8Array(data)) as Frame;
      for (const out of rewrite.toCaller?.(frame, seen) ?? [frame]) toCaller(out);
    });
    callee.on('close', () => setTimeout(() => caller.terminate(), rewrite.closeLaterMs ?? 0));
    caller.on('close', () => callee.close());
    callee.on('error', () => caller.terminate());
    caller.on('error', () => callee.terminate());
  });
  return new Promise((resolve) =>
    wss.on('listening', () =>
      resolve({
        url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/callwire`,
        close: () => {
          for (const c of wss.clients) c.terminate();
          return new Promise((r) => wss.close(() => r()));
        },
      }),
    ),
  );
}

/**
 * A plain-HTTP callee (§5.6) of `conformance/count` and `conformance/hold` that writes
 * a stream's lines only once the stream has ended: HTTP-2's "each value as it comes",
 * broken. `hold` never ends, so its value never leaves.
 */
export function bufferingHttpServer(): Promise<Listening> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = new Uint8Array(Buffer.concat(chunks));
      const codec = req.headers['content-type'] === 'application/msgpack' ? codecs.msgpack : codecs.json;
      const input = (body.byteLength === 0 ? null : codec.decode(body)) as { count?: number } | null;
      if (req.url !== '/call/conformance/count') return; // conformance/hold: held until the end that never comes
      const values = Array.from({ length: input?.count ?? 0 }, (_v, n) => ({ n }));
      const envelope = { kind: 'callwire.terminal', outcome: 'success', exit_code: 0, events_seen: values.length };
      res.writeHead(200, { 'content-type': 'application/x-ndjson', trailer: 'x-callwire-exit-code' });
      res.addTrailers({ 'x-callwire-exit-code': '0' });
      res.end([...values, envelope].map((v) => `${JSON.stringify(v)}\n`).join(''));
    });
  });
  // The runner opens its WebSocket first, as for every scenario: it is accepted, and stays idle.
  const wss = new WebSocketServer({ server, handleProtocols: (offered) => [...offered][0] ?? false });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/callwire`,
        close: () => {
          for (const c of wss.clients) c.terminate();
          server.closeAllConnections();
          return new Promise((r) => server.close(() => r()));
        },
      }),
    ),
  );
}

/** `op` with its handler's input stream passed through `reorder` first: an exec that applies items out of order. */
export function withInput(op: Operation, reorder: (items: AsyncIterable<unknown>) => AsyncIterable<unknown>): Operation {
  if (op.kind !== 'subscription') return op;
  const real = op.handler;
  return defineOperation({ ...op, handler: (input, ctx) => real(input, deriveContext(ctx, { input: ctx.input && reorder(ctx.input) })) });
}

/** `op` (a subscription) with its source pulled as fast as it yields, whatever the call's buffer: no per-call bound. */
export function pulledEagerly(op: Operation): Operation {
  if (op.kind !== 'subscription') return op;
  const real = op.handler;
  return defineOperation({
    ...op,
    handler: (input, ctx) =>
      (async function* () {
        const items: unknown[] = [];
        let done = false;
        void (async () => {
          for await (const item of real(input, ctx) as AsyncIterable<unknown>) items.push(item);
          done = true;
        })();
        while (!done || items.length > 0) {
          if (items.length > 0) yield items.shift();
          else await new Promise((resolve) => setImmediate(resolve));
        }
      })(),
  });
}
