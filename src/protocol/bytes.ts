/** The byte arrays one after another, in one new array. `total` is their summed length, when the caller already has it. */
export function concatBytes(parts: readonly Uint8Array[], total = parts.reduce((n, part) => n + part.byteLength, 0)): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
