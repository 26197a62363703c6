/**
 * Writes spec/vectors/{msgpack,json}.json: frames as length-prefixed hex, with the
 * decoded frame or the expected error. Run once when the vectors change
 * (`npx tsx scripts/gen-vectors.ts`); tests replay the committed files, so a codec
 * change that alters bytes shows up as a failing test, not a silent rewrite.
 */
import { writeFileSync } from 'node:fs';
import { codecs, encodeFrame, limits, protocolCodes, type CodecName } from '../src/protocol/index.js';

interface ValidSpec { name: string; frame: unknown }
interface InvalidSpec { name: string; value?: unknown; raw?: Uint8Array; prefix?: number; error: { kind: string; field?: string; answer: string } }

/** `levels` maps or arrays, each the only value of the one around it (LIM-2). */
const nested = (levels: number, kind: 'array' | 'map'): unknown => {
  let value: unknown = kind === 'array' ? [] : {};
  for (let level = 1; level < levels; level++) value = kind === 'array' ? [value] : { a: value };
  return value;
};
/** A request whose input nests `levels` deep: the frame is two levels deeper (envelope, payload). */
const requestNested = (id: string, levels: number, kind: 'array' | 'map'): unknown => ({ type: 'call.requested', id, payload: { operationId: 'echo/say', input: nested(levels, kind) } });

const valid: ValidSpec[] = [
  { name: 'requested with input', frame: { type: 'call.requested', id: 'c-1', payload: { operationId: 'echo/say', input: { text: 'hi' } } } },
  { name: 'requested with leading slash', frame: { type: 'call.requested', id: 'c-2', payload: { operationId: '/services/list' } } },
  { name: 'requested with deadline, token and expect', frame: { type: 'call.requested', id: 'c-3', payload: { operationId: 'docker/container/exec', input: { containerId: 'x', cmd: ['true'] }, auth_token: 'tok', deadline_ms: 5000, expect: 'stream' } } },
  { name: 'responded with object', frame: { type: 'call.responded', id: 'c-1', payload: { output: { text: 'hi' } } } },
  { name: 'responded with null', frame: { type: 'call.responded', id: 'c-1', payload: { output: null } } },
  { name: 'responded with bytes', frame: { type: 'call.responded', id: 'c-4', payload: { output: { stream: 'stdout', data: new Uint8Array([0, 1, 254, 255]) } } } },
  { name: 'responded terminal exec frame', frame: { type: 'call.responded', id: 'c-4', payload: { output: { exitCode: -9, terminal: true, stdoutBytes: 4, stderrBytes: 0 } } } },
  { name: 'responded with multi-byte text', frame: { type: 'call.responded', id: 'c-5', payload: { output: { stream: 'stdout', text: 'héllo ✓ 😀' } } } },
  { name: 'completed', frame: { type: 'call.completed', id: 'c-4', payload: {} } },
  { name: 'aborted', frame: { type: 'call.aborted', id: 'c-4', payload: {} } },
  { name: 'input item', frame: { type: 'call.input', id: 'c-6', payload: { item: { data: new Uint8Array([104, 105, 10]) } } } },
  { name: 'exec with a tty and streamed stdin', frame: { type: 'call.requested', id: 'c-7', payload: { operationId: 'docker/container/exec', input: { containerId: 'x', cmd: ['sh'], tty: { cols: 80, rows: 24 }, stdin: 'stream' }, expect: 'stream', credit: 1048576 } } },
  { name: 'exec input: resize', frame: { type: 'call.input', id: 'c-7', payload: { item: { resize: { cols: 120, rows: 40 } } } } },
  { name: 'exec input: signal', frame: { type: 'call.input', id: 'c-7', payload: { item: { signal: 'SIGINT' } } } },
  { name: 'input item null', frame: { type: 'call.input', id: 'c-6', payload: { item: null } } },
  { name: 'end of input', frame: { type: 'call.end', id: 'c-6', payload: {} } },
  { name: 'credit', frame: { type: 'call.credit', id: 'c-6', payload: { bytes: 1048576 } } },
  { name: 'requested resumable', frame: { type: 'call.requested', id: 'r-1', payload: { operationId: 'docker/container/exec', input: { containerId: 'x', cmd: ['sh'] }, expect: 'stream', credit: 1048576, resume: { grace_ms: 30000 } } } },
  { name: 'resumable', frame: { type: 'call.resumable', id: 'r-1', payload: { token: 'q2xT8m0cJk3pLr9WvB1dYs7e', grace_ms: 30000 } } },
  { name: 'responded numbered', frame: { type: 'call.responded', id: 'r-1', payload: { output: { stream: 'stdout', data: new Uint8Array([104, 105, 10]) }, seq: 1 } } },
  { name: 'credit acknowledging output', frame: { type: 'call.credit', id: 'r-1', payload: { bytes: 524288, seq: 12 } } },
  { name: 'input numbered', frame: { type: 'call.input', id: 'r-1', payload: { item: { data: new Uint8Array([108, 115, 10]) }, seq: 3 } } },
  { name: 'end of input numbered', frame: { type: 'call.end', id: 'r-1', payload: { seq: 4 } } },
  { name: 'resume', frame: { type: 'call.resume', id: 'r-1', payload: { token: 'q2xT8m0cJk3pLr9WvB1dYs7e', seq: 12, credit: 1048576 } } },
  { name: 'resumed', frame: { type: 'call.resumed', id: 'r-1', payload: { input_seq: 2, input_credit: 1048000 } } },
  ...Object.entries(protocolCodes).map(([code, info]) => ({
    name: `error ${code}`,
    frame: { type: 'call.error', id: `e-${code.toLowerCase()}`, payload: { code, message: info.meaning, retryable: info.retryable } },
  })),
  { name: `requested nested maxNestingDepth (${limits.maxNestingDepth}) deep`, frame: requestNested('c-8', limits.maxNestingDepth - 2, 'array') },
  { name: 'error with details', frame: { type: 'call.error', id: 'e-d', payload: { code: 'CONTAINER_NOT_FOUND', message: 'no such container: x', retryable: false, details: { containerId: 'x' } } } },
];

const invalid: InvalidSpec[] = [
  { name: 'length 0', prefix: 0, error: { kind: 'FRAME_EMPTY', answer: 'close' } },
  { name: 'length over maxFrameBytes', prefix: 16 * 1024 * 1024 + 1, error: { kind: 'FRAME_TOO_LARGE', answer: 'close' } },
  { name: 'not an envelope (number)', value: 42, error: { kind: 'INVALID_ENVELOPE', field: '(frame)', answer: 'close' } },
  { name: 'missing id', value: { type: 'call.requested', payload: { operationId: 'a' } }, error: { kind: 'INVALID_ENVELOPE', field: 'id', answer: 'close' } },
  { name: 'empty id', value: { type: 'call.requested', id: '', payload: { operationId: 'a' } }, error: { kind: 'INVALID_ENVELOPE', field: 'id', answer: 'close' } },
  { name: 'operationId not a string', value: { type: 'call.requested', id: 'x1', payload: { operationId: 7 } }, error: { kind: 'INVALID_ENVELOPE', field: 'payload.operationId', answer: 'INVALID_FRAME' } },
  { name: 'deadline not an integer', value: { type: 'call.requested', id: 'x2', payload: { operationId: 'a', deadline_ms: 1.5 } }, error: { kind: 'INVALID_ENVELOPE', field: 'payload.deadline_ms', answer: 'INVALID_FRAME' } },
  { name: 'completed with payload', value: { type: 'call.completed', id: 'x3', payload: { extra: 1 } }, error: { kind: 'INVALID_ENVELOPE', field: 'payload', answer: 'INVALID_FRAME' } },
  { name: 'responded without output', value: { type: 'call.responded', id: 'x4', payload: {} }, error: { kind: 'INVALID_ENVELOPE', field: 'payload.output', answer: 'INVALID_FRAME' } },
  { name: 'error without retryable', value: { type: 'call.error', id: 'x5', payload: { code: 'INTERNAL', message: 'm' } }, error: { kind: 'INVALID_ENVELOPE', field: 'payload.retryable', answer: 'INVALID_FRAME' } },
  { name: 'unknown envelope field', value: { type: 'call.aborted', id: 'x6', payload: {}, extra: true }, error: { kind: 'INVALID_ENVELOPE', field: '(frame)', answer: 'INVALID_FRAME' } },
  { name: 'payload not a map', value: { type: 'call.aborted', id: 'x7', payload: [] }, error: { kind: 'INVALID_ENVELOPE', field: 'payload', answer: 'INVALID_FRAME' } },
  { name: 'input without item', value: { type: 'call.input', id: 'x8', payload: {} }, error: { kind: 'INVALID_ENVELOPE', field: 'payload.item', answer: 'INVALID_FRAME' } },
  { name: 'negative credit', value: { type: 'call.credit', id: 'x9', payload: { bytes: -1 } }, error: { kind: 'INVALID_ENVELOPE', field: 'payload.bytes', answer: 'INVALID_FRAME' } },
  { name: 'resume without seq', value: { type: 'call.resume', id: 'x12', payload: { token: 't', credit: 1 } }, error: { kind: 'INVALID_ENVELOPE', field: 'payload.seq', answer: 'INVALID_FRAME' } },
  { name: 'resume grace not positive', value: { type: 'call.requested', id: 'x13', payload: { operationId: 'a', resume: { grace_ms: 0 } } }, error: { kind: 'INVALID_ENVELOPE', field: 'payload.resume.grace_ms', answer: 'INVALID_FRAME' } },
  { name: 'arrays nested one level over maxNestingDepth', value: requestNested('x10', limits.maxNestingDepth - 1, 'array'), error: { kind: 'FRAME_TOO_DEEP', answer: 'close' } },
  { name: 'maps nested one level over maxNestingDepth', value: requestNested('x11', limits.maxNestingDepth - 1, 'map'), error: { kind: 'FRAME_TOO_DEEP', answer: 'close' } },
];

const rawInvalid: Record<CodecName, InvalidSpec[]> = {
  msgpack: [
    { name: 'truncated msgpack map', raw: new Uint8Array([0x83, 0xa4]), error: { kind: 'UNDECODABLE', answer: 'close' } },
    { name: 'two msgpack values in one frame', raw: new Uint8Array([0x01, 0x02]), error: { kind: 'UNDECODABLE', answer: 'close' } },
  ],
  json: [
    { name: 'not JSON', raw: new TextEncoder().encode('{"type":'), error: { kind: 'UNDECODABLE', answer: 'close' } },
    { name: 'invalid UTF-8', raw: new Uint8Array([0x7b, 0xff, 0x7d]), error: { kind: 'UNDECODABLE', answer: 'close' } },
  ],
};

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const prefixOnly = (n: number): Uint8Array => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, false);
  return b;
};

for (const name of ['msgpack', 'json'] as const) {
  const codec = codecs[name];
  const jsonSafe = (v: unknown): unknown => JSON.parse(new TextDecoder().decode(codecs.json.encode(v)));
  const out = {
    codec: name,
    note: 'hex is the length-prefixed byte-stream form (spec/PROTOCOL.md §5.1); on WebSocket the message is hex without its first 4 bytes. Bytes in decoded frames are written {"$base64": ...}.',
    valid: valid.map((v) => ({ name: v.name, hex: hex(encodeFrame(codec.encode(v.frame))), frame: jsonSafe(v.frame) })),
    invalid: [...invalid, ...rawInvalid[name]].map((v) => ({
      name: v.name,
      hex: hex(v.prefix !== undefined ? prefixOnly(v.prefix) : encodeFrame(v.raw ?? codec.encode(v.value))),
      error: v.error,
    })),
  };
  writeFileSync(new URL(`../spec/vectors/${name}.json`, import.meta.url), JSON.stringify(out, null, 2) + '\n');
}
