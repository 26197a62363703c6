/** A SHA-256 as `serve` prints it (hex, with or without colons), as WebTransport's init takes it. */
export function pinnedCertificate(certHash: string): { algorithm: 'sha-256'; value: Uint8Array } {
  const hex = certHash.replace(/:/g, '');
  const value = new Uint8Array(hex.length / 2);
  for (let i = 0; i < value.length; i++) value[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return { algorithm: 'sha-256', value };
}
