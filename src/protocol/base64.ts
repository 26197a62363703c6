/**
 * Standard base64 for the JSON codec's `{"$base64"}` bytes (spec/PROTOCOL.md §5.3),
 * with no Node-only API, so the protocol layer runs in browsers too.
 */
const ALPHABET = Uint8Array.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/', (c) => c.charCodeAt(0));
const PAD = 0x3d; // '='
const ascii = new TextDecoder();

/**
 * Three bytes to four characters, written as ASCII codes and decoded once: building a string
 * for btoa through String.fromCharCode(...chunk) ran at ~8 MB/s, the JSON codec's bound on
 * binary output (bench/PROFILE.md "The JSON codec's bytes").
 */
export function toBase64(bytes: Uint8Array): string {
  const n = bytes.byteLength;
  const out = new Uint8Array(Math.ceil(n / 3) * 4);
  let o = 0;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = ALPHABET[v >>> 18]!;
    out[o++] = ALPHABET[(v >>> 12) & 63]!;
    out[o++] = ALPHABET[(v >>> 6) & 63]!;
    out[o++] = ALPHABET[v & 63]!;
  }
  if (i < n) {
    const b0 = bytes[i]!;
    const b1 = i + 1 < n ? bytes[i + 1]! : 0;
    out[o++] = ALPHABET[b0 >>> 2]!;
    out[o++] = ALPHABET[((b0 & 3) << 4) | (b1 >>> 4)]!;
    out[o++] = i + 1 < n ? ALPHABET[(b1 & 15) << 2]! : PAD;
    out[o++] = PAD;
  }
  return ascii.decode(out);
}

/** Throws on text that is not base64. */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
