import { fitsCallId, type Envelope } from './envelope.js';

/**
 * The envelopes every call sends, checked by hand instead of by the schemas of
 * envelope.ts (spec/PROTOCOL.md §3, §4): a request, an answer or item, credit, input
 * and the ends. A check here only ever says yes to a frame the schemas accept, and
 * builds what they would build; anything else (an extra field, a resume, an odd
 * number) is `undefined`, and the schemas decide it and name its error (§3.4). So the
 * schemas stay the one statement of what is valid, and this is only a shortcut
 * through them; test/protocol/known-envelope.test.ts holds the two to agreeing.
 */

type Payload = Record<string, unknown>;

/** The envelope `{type, id, payload}` as the schemas would return it, or undefined to let them decide. */
export function knownEnvelope(type: unknown, id: unknown, payload: unknown): Envelope | undefined {
  if (typeof id !== 'string' || id.length === 0 || !fitsCallId(id) || !isPlainObject(payload)) return undefined;
  const checked = knownPayload(type, payload);
  return checked === undefined ? undefined : ({ type, id, payload: checked } as Envelope);
}

/** A decoded value that is exactly `{type, id, payload}` of a known shape, as knownEnvelope. */
export function knownEnvelopeOf(value: unknown): Envelope | undefined {
  if (!isPlainObject(value)) return undefined;
  let keys = 0;
  for (const key in value) {
    if (key !== 'type' && key !== 'id' && key !== 'payload') return undefined;
    keys++;
  }
  if (keys !== 3) return undefined;
  return knownEnvelope(value['type'], value['id'], value['payload']);
}

function knownPayload(type: unknown, payload: Payload): Payload | undefined {
  switch (type) {
    case 'call.requested':
      return requested(payload);
    case 'call.responded':
      return withSeq(payload, 'output');
    case 'call.input':
      return withSeq(payload, 'item');
    case 'call.credit':
      return credit(payload);
    case 'call.end':
      return withSeq(payload, undefined);
    case 'call.completed':
    case 'call.aborted':
      return isEmpty(payload) ? {} : undefined;
    default:
      return undefined;
  }
}

/** `{[key]: anything, seq?}` (§4.2, §4.7); no key: `{seq?}` (call.end). */
function withSeq(payload: Payload, key: 'output' | 'item' | undefined): Payload | undefined {
  let seen = 0;
  for (const name in payload) {
    if (name !== key && name !== 'seq') return undefined;
    seen++;
  }
  const hasSeq = Object.hasOwn(payload, 'seq');
  if (hasSeq && !isSeq(payload['seq'])) return undefined;
  if (key === undefined) return hasSeq ? { seq: payload['seq'] } : {};
  if (seen !== (hasSeq ? 2 : 1)) return undefined; // the key itself is required
  return hasSeq ? { [key]: payload[key], seq: payload['seq'] } : { [key]: payload[key] };
}

/** `{bytes, seq?}` (§4.7). */
function credit(payload: Payload): Payload | undefined {
  let seen = 0;
  for (const name in payload) {
    if (name !== 'bytes' && name !== 'seq') return undefined;
    seen++;
  }
  const bytes = payload['bytes'];
  if (!isSeq(bytes)) return undefined;
  if (seen === 1) return { bytes };
  const seq = payload['seq'];
  return isSeq(seq) ? { bytes, seq } : undefined;
}

/** §4.1 without `resume` (left to the schema): the fields a call asks with. */
function requested(payload: Payload): Payload | undefined {
  const out: Payload = {};
  for (const name in payload) {
    const value = payload[name];
    switch (name) {
      case 'operationId':
        if (typeof value !== 'string' || value.length === 0) return undefined;
        break;
      case 'input':
        break;
      case 'auth_token':
        if (typeof value !== 'string') return undefined;
        break;
      case 'expect':
        if (value !== 'unary' && value !== 'stream') return undefined;
        break;
      case 'deadline_ms':
      case 'credit':
        if (!isPositive(value)) return undefined;
        break;
      default:
        return undefined;
    }
    out[name] = value;
  }
  return out['operationId'] === undefined ? undefined : out;
}

/** An integer at least 0, as the schemas' `int().min(0)` takes it. */
function isSeq(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isPositive(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}

function isEmpty(payload: Payload): boolean {
  for (const _ in payload) return false;
  return true;
}

/** A map as a decoder builds it: not an array, not a class instance, nothing inherited but Object's. */
function isPlainObject(value: unknown): value is Payload {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}
