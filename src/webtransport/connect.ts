import { webTransportWindows } from './windows.js';
import { loadWebTransport, type WtSession } from './types.js';

export interface OpenOptions {
  /** SHA-256 (hex, colons allowed) of a self-signed server certificate to pin. */
  readonly certHash?: string | undefined;
  /** HTTP/3 (QUIC) instead of HTTP/2. */
  readonly http3?: boolean | undefined;
}

/**
 * Opens a client session (not yet ready: await `ready`), set up once for the SDK
 * and the conformance peer alike: the windows both ends must agree on, the pinned
 * certificate, and HTTP/2 unless HTTP/3 is asked for.
 */
export async function openWebTransport(url: string, options: OpenOptions = {}): Promise<WtSession> {
  // A browser has its own WebTransport, over HTTP/3: no library, no polyfill.
  const Native = (globalThis as { WebTransport?: new (url: string, init: Record<string, unknown>) => WtSession }).WebTransport;
  if (Native) {
    const wt = new Native(url, options.certHash ? { serverCertificateHashes: [{ algorithm: 'sha-256', value: hexBytes(options.certHash.replace(/:/g, '')) }] } : {});
    wt.closed.catch(() => undefined);
    return wt;
  }
  const lib = await loadWebTransport();
  // The library loads its native HTTP/3 part asynchronously; a session built before it
  // settles fails with "Lib quiche loading attempt did not end".
  if (options.http3) await lib.quicheLoaded?.catch(() => undefined);
  const init: Record<string, unknown> = { forceReliable: options.http3 !== true, ...webTransportWindows };
  if (options.certHash) {
    init['serverCertificateHashes'] = [{ algorithm: 'sha-256', value: hexBytes(options.certHash.replace(/:/g, '')) }];
  }
  const wt = new lib.WebTransport(url, init);
  // A failed handshake also rejects `closed`; callers learn of it through `ready`.
  wt.closed.catch(() => undefined);
  return wt;
}

function hexBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}
