import { createHash, webcrypto, X509Certificate } from 'node:crypto';

export interface Certificate {
  readonly certPem: string;
  readonly keyPem: string;
  /** SHA-256 of the DER certificate, lowercase hex: what WebTransport clients pin. */
  readonly sha256: string;
  readonly notAfter: Date;
}

/** Clients pinning a hash refuse certificates valid for 14 days or more (transport notes, defect 6). */
const VALID_DAYS = 10;

/**
 * A fresh self-signed ECDSA P-256 certificate for `hosts`, valid for 10 days. The
 * x509 library is loaded here, by the first server that makes one, not by importing ours.
 */
export async function selfSignedCertificate(hosts: readonly string[]): Promise<Certificate> {
  // @peculiar/x509 resolves its services through tsyringe, which needs the Reflect metadata API first.
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as Crypto);
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(notBefore.getTime() + VALID_DAYS * 24 * 3600 * 1000);
  const ips = hosts.filter((h) => /^[\d.]+$/.test(h) || h.includes(':'));
  const dns = hosts.filter((h) => !ips.includes(h));
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(8))).toString('hex'),
    name: `CN=${dns[0] ?? 'localhost'}`,
    notBefore,
    notAfter,
    signingAlgorithm: algorithm,
    keys,
    extensions: [
      new x509.SubjectAlternativeNameExtension([...dns.map((value) => ({ type: 'dns' as const, value })), ...ips.map((value) => ({ type: 'ip' as const, value }))]),
      new x509.BasicConstraintsExtension(false),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${Buffer.from(pkcs8).toString('base64').match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
  return {
    certPem: cert.toString('pem'),
    keyPem,
    sha256: createHash('sha256').update(Buffer.from(cert.rawData)).digest('hex'),
    notAfter,
  };
}

/** SHA-256 of a PEM certificate's DER bytes, lowercase hex. */
export function certificateSha256(certPem: string): string {
  return createHash('sha256').update(new X509Certificate(certPem).raw).digest('hex');
}
