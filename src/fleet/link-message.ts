/**
 * One message of a link between a gateway and an agent (docs/fleet.md "Link
 * messages"): a virtual connection's kind, sequence number and id ahead of its body.
 * Core NATS delivers at most once, so each side numbers what it sends on a virtual
 * connection, and the other treats a gap as the connection lost: its resumable calls
 * are taken up again with replay (spec §4.9), the rest end UNAVAILABLE.
 */

export type LinkKind = 'open' | 'frame' | 'part' | 'ping' | 'close' | 'lost';
const KINDS: readonly LinkKind[] = ['open', 'frame', 'part', 'ping', 'close', 'lost'];

export interface LinkMessage {
  readonly kind: LinkKind;
  /** 1, 2, 3… per virtual connection and direction; 0 on a `lost` about a connection the sender does not know. */
  readonly seq: number;
  readonly vc: string;
  readonly body: Uint8Array;
}

const HEAD = 6; // kind (1), seq (4), vc length (1)
const EMPTY = new Uint8Array(0);

export function encodeLink(kind: LinkKind, seq: number, vc: string, body: Uint8Array = EMPTY): Uint8Array {
  const id = Buffer.from(vc, 'latin1');
  const out = Buffer.allocUnsafe(HEAD + id.length + body.byteLength);
  out[0] = KINDS.indexOf(kind);
  out.writeUInt32BE(seq >>> 0, 1);
  out[5] = id.length;
  id.copy(out, HEAD);
  out.set(body, HEAD + id.length);
  return out;
}

/** Undefined for a message that is not one: the sender is told nothing, it is dropped. */
export function decodeLink(data: Uint8Array): LinkMessage | undefined {
  if (data.byteLength < HEAD) return undefined;
  const kind = KINDS[data[0] ?? 255];
  const idLength = data[5] ?? 0;
  if (kind === undefined || idLength === 0 || data.byteLength < HEAD + idLength) return undefined;
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return { kind, seq: view.readUInt32BE(1), vc: view.toString('latin1', HEAD, HEAD + idLength), body: data.subarray(HEAD + idLength) };
}

/**
 * Numbers what one side sends on one virtual connection, and cuts a body larger than
 * what the NATS server takes in one message (`max_payload`) into `part`s.
 */
export class LinkSender {
  private seq = 0;

  constructor(
    private readonly publish: (data: Uint8Array) => void,
    readonly vc: string,
    private readonly maxPayload: number,
  ) {}

  send(kind: LinkKind, body: Uint8Array = EMPTY): void {
    const room = Math.max(1024, this.maxPayload - HEAD - 255);
    let offset = 0;
    while (kind === 'frame' && body.byteLength - offset > room) {
      this.publish(encodeLink('part', ++this.seq, this.vc, body.subarray(offset, offset + room)));
      offset += room;
    }
    this.publish(encodeLink(kind, ++this.seq, this.vc, offset === 0 ? body : body.subarray(offset)));
  }
}

/** What a receiver makes of the next message of a virtual connection. */
export type Received = { readonly kind: Exclude<LinkKind, 'part'>; readonly body: Uint8Array } | 'gap' | 'pending';

/** Checks one virtual connection's sequence and joins the parts of a frame. */
export class LinkReceiver {
  private expected = 1;
  private parts: Uint8Array[] = [];
  private partBytes = 0;

  constructor(private readonly maxFrameBytes: number) {}

  accept(message: LinkMessage): Received {
    if (message.seq !== this.expected) return 'gap';
    this.expected++;
    if (message.kind === 'part') {
      this.parts.push(message.body);
      this.partBytes += message.body.byteLength;
      return this.partBytes > this.maxFrameBytes ? 'gap' : 'pending';
    }
    if (this.parts.length === 0 || message.kind !== 'frame') return { kind: message.kind, body: message.body };
    const whole = Buffer.concat([...this.parts, message.body]);
    this.parts = [];
    this.partBytes = 0;
    return { kind: 'frame', body: whole };
  }
}
