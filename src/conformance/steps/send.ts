import type { Handler } from './handler.js';

/** `send`: a frame in the connection's codec; on WebTransport `onStreamOf` picks another call's stream. */
export const send: Handler<'send'> = (step, run) => run.conn(step.on).sendValue(step.send, step.onStreamOf);

/** `sendHex`: raw bytes, a message or (WebTransport) a stream's bytes after its length prefix. */
export const sendHex: Handler<'sendHex'> = (step, run) => run.conn(step.on).sendBytes(new Uint8Array(Buffer.from(step.sendHex, 'hex')), step.id);

/** `sendText`: a WebSocket text message. */
export const sendText: Handler<'sendText'> = (step, run) => run.conn(step.on).sendText(step.sendText);

/** `sendPrefix`: a 4-byte length prefix announcing `length + plus` bytes, and nothing after it. */
export const sendPrefix: Handler<'sendPrefix'> = (step, run) => {
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, Number(step.sendPrefix.length) + step.sendPrefix.plus, false);
  return run.conn(step.on).sendBytes(prefix);
};

/** `sendFilled`: a message of `length + plus` zero bytes. */
export const sendFilled: Handler<'sendFilled'> = (step, run) => run.conn(step.on).sendBytes(new Uint8Array(Number(step.sendFilled.length) + step.sendFilled.plus));
