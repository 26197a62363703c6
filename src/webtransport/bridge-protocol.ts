// The bridge between a Node process and its Deno HTTP/3 edge (docs/http3.md "HTTP/3"), defined
// once: the Node side (src/transports/h3-bridge.ts, src/webtransport/deno.ts) and the
// Deno side (edge/h3-server-edge.ts, edge/h3-client-edge.ts) both parse every bridge
// message with these schemas. It imports nothing, not even zod: Deno runs the edge with
// --no-config, so a bare import resolves to nothing there, and the edge must not read a
// consumer's node_modules or deno.json.
//
// The bridge: a private unix socket, one connection per session, opened with one JSON line
// carrying the secret from the edge's config file:
//   server's edge -> Node:  session {url}               -> Node answers accepted {id} or refused {status, reason}
//   Node -> client's edge:  session {url, certHash?, idleTimeoutMs} -> the edge answers accepted {id} or refused {reason}
// After `accepted`, the connection carries the session's streams and its end as binary
// frames (./bridge-mux.ts): open, data, fin, reset and credit per stream; close {code,
// reason}; and, from the server's edge, lost before it closes the connection of a session
// whose QUIC connection was lost (no close: §4.9). Either end closing the connection ends the session.
// An edge says it is up with one `ready` line on its standard output.

/** A message that fails its schema: the connection that carried it is ended, nothing else. */
export class BridgeMessageError extends Error {
  override readonly name = 'BridgeMessageError';
}

/** The longest bridge line either side reads before giving up on the connection. */
export const BRIDGE_LINE_MAX_BYTES = 64 * 1024;

interface Field<T, Optional extends boolean = false> {
  readonly optional: Optional;
  check(value: unknown, name: string): T;
}

function field<T>(check: (value: unknown, name: string) => T): Field<T> {
  return { optional: false, check };
}

function fail(name: string, expected: string, value: unknown): never {
  throw new BridgeMessageError(`bridge message: ${name} must be ${expected}, got ${JSON.stringify(value)?.slice(0, 80) ?? String(value)}`);
}

const text = (maxLength: number): Field<string> =>
  field((value, name) => (typeof value === 'string' && value.length <= maxLength ? value : fail(name, `a string of at most ${maxLength} characters`, value)));

const hex = (bytes: number): Field<string> =>
  field((value, name) => (typeof value === 'string' && value.length === 2 * bytes && /^[0-9a-f]*$/.test(value) ? value : fail(name, `${bytes} bytes in lowercase hex`, value)));

const integer = (min: number, max: number): Field<number> =>
  field((value, name) => (Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max ? (value as number) : fail(name, `an integer from ${min} to ${max}`, value)));

const optional = <T>(inner: Field<T>): Field<T, true> => ({ optional: true, check: inner.check });

type Shape = Record<string, Field<unknown, boolean>>;
type Out<F> = F extends Field<infer T, boolean> ? T : never;
type RequiredKeys<S extends Shape> = { [K in keyof S]: S[K] extends Field<unknown, true> ? never : K }[keyof S];
type OptionalKeys<S extends Shape> = Exclude<keyof S, RequiredKeys<S>>;
type Fields<S extends Shape> = { [K in RequiredKeys<S>]: Out<S[K]> } & { [K in OptionalKeys<S>]?: Out<S[K]> };

/** One kind of bridge message: a JSON object with `type` and exactly these fields. */
export interface MessageSchema<Type extends string, T> {
  readonly type: Type;
  parse(value: unknown): T;
}

function message<Type extends string, S extends Shape>(type: Type, shape: S): MessageSchema<Type, { type: Type } & Fields<S>> {
  return {
    type,
    parse(value) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('a bridge message', 'an object', value);
      const record = value as Record<string, unknown>;
      if (record['type'] !== type) fail('type', JSON.stringify(type), record['type']);
      for (const key of Object.keys(record)) if (key !== 'type' && !(key in shape)) fail(key, 'absent (no such field)', record[key]);
      const out: Record<string, unknown> = { type };
      for (const [key, schema] of Object.entries(shape)) {
        if (record[key] === undefined) {
          if (!schema.optional) fail(key, 'present', undefined);
          continue;
        }
        out[key] = schema.check(record[key], key);
      }
      return out as { type: Type } & Fields<S>;
    },
  };
}

// A secret is 32 random bytes in hex, made anew for each edge.
const secret = hex(32);
const sessionId = text(64);
const reason = text(1024);

/** Every message of the bridge. */
export const bridgeMessages = {
  /** Opens a session's connection: the server's edge reports one at `url`; a client asks its edge to open one. */
  session: message('session', { secret, url: text(4096), certHash: optional(hex(32)), idleTimeoutMs: optional(integer(1, 24 * 3_600_000)) }),
  /** The session is open (`id` names it in logs); the connection's frames follow. */
  accepted: message('accepted', { id: sessionId }),
  /** The session is not open: `status` is the HTTP status a caller is refused with (the server's side). */
  refused: message('refused', { status: optional(integer(100, 599)), reason }),
  /** The edge's first line on its standard output: it is up (the server's edge says on which UDP port). */
  ready: message('ready', { port: optional(integer(1, 65535)) }),
  /** The server's edge's config file. */
  serverEdgeConfig: message('server-edge-config', {
    dir: text(4096),
    host: text(256),
    port: integer(0, 65535),
    certFile: text(4096),
    keyFile: text(4096),
    socket: text(4096),
    secret,
    /** Streams a connection may have open at once: the call streams allowed a session (§5.4, WT-5) and the CONNECT stream. */
    maxStreams: integer(1, 1_000_000),
    /** §5.5: QUIC PINGs this often, and a connection silent for two intervals is closed (0: Deno's defaults). */
    keepaliveMs: integer(0, 24 * 3_600_000),
  }),
  /** A client's edge's config file. */
  clientEdgeConfig: message('client-edge-config', { dir: text(4096), socket: text(4096), secret }),
} as const;

type Messages = typeof bridgeMessages;
export type BridgeMessageKind = keyof Messages;
/** A bridge message of kind `K`, as parsed. */
export type BridgeMessage<K extends BridgeMessageKind = BridgeMessageKind> = ReturnType<Messages[K]['parse']>;

/**
 * Parses one bridge line (JSON, without its newline) as one of the kinds `allowed` at
 * this point of a connection. Throws BridgeMessageError for anything else.
 */
export function parseBridgeLine<K extends BridgeMessageKind>(line: string, allowed: readonly K[]): BridgeMessage<K> {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new BridgeMessageError(`bridge message: not JSON: ${line.slice(0, 80)}`);
  }
  const type = (value as { type?: unknown } | null)?.type;
  const kind = allowed.find((k) => bridgeMessages[k].type === type);
  if (kind === undefined) throw new BridgeMessageError(`bridge message: type must be one of ${allowed.map((k) => bridgeMessages[k].type).join(', ')}, got ${JSON.stringify(type)}`);
  return bridgeMessages[kind].parse(value) as BridgeMessage<K>;
}

/** One bridge line: the message as JSON and its newline. */
export function bridgeLine<K extends BridgeMessageKind>(message: BridgeMessage<K>): string {
  return `${JSON.stringify(message)}\n`;
}

/**
 * Whether `given` is the bridge's secret, in time independent of where they differ (the
 * Deno side's check; Node uses node:crypto's timingSafeEqual). Secrets have one length.
 */
export function sameSecret(given: string, expected: string): boolean {
  let differ = given.length ^ expected.length;
  for (let i = 0; i < expected.length; i++) differ |= (given.charCodeAt(i) | 0) ^ expected.charCodeAt(i);
  return differ === 0;
}
