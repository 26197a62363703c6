import { pinnedCertificate, type WebTransportCarrier } from '../protocol/index.js';
import { findDeno, openHttp3Session } from './deno.js';
import { webTransportWindows } from './windows.js';
import { loadWebTransport, type WtSession } from './types.js';

/** Which carrier a WebTransport session rides: `auto` is HTTP/3 where this process can speak it, else HTTP/2. */
export type WtCarrierChoice = 'auto' | 'h3' | 'h2';

export interface OpenOptions {
  /** SHA-256 (hex, colons allowed) of a self-signed server certificate to pin. */
  readonly certHash?: string | undefined;
  readonly transport?: WtCarrierChoice | undefined;
}

/** A session and the carrier it rides. */
export interface OpenedSession {
  readonly session: WtSession;
  readonly carrier: WebTransportCarrier;
  /**
   * Whether aborting a stream's writable resets it on the wire. Not through Deno, whose
   * QUIC API has no reset (docs/http3.md "Upstream defects"): there an abort ends the stream with a FIN.
   */
  readonly resets: boolean;
}

/**
 * How long `auto` gives HTTP/3 before it also tries HTTP/2 (docs/http3.md "Node client"). On
 * loopback an HTTP/3 session is ready in well under this; a server without HTTP/3
 * (its UDP port closed or filtered) never answers, and HTTP/2 then wins this much later.
 */
export const HTTP3_HEAD_START_MS = 300;

/**
 * Opens a client session (await its `ready`), set up once for the SDK and the
 * conformance peer alike: the windows both ends must agree on, the pinned
 * certificate, and the carrier.
 */
export async function openWebTransport(url: string, options: OpenOptions = {}): Promise<OpenedSession> {
  // A browser has its own WebTransport, over HTTP/3: no library, no polyfill.
  const Native = (globalThis as { WebTransport?: new (url: string, init: Record<string, unknown>) => WtSession }).WebTransport;
  if (Native) {
    const wt = new Native(url, options.certHash ? { serverCertificateHashes: [pinnedCertificate(options.certHash)] } : {});
    wt.closed.catch(() => undefined);
    return { session: wt, carrier: 'http/3', resets: !('Deno' in globalThis) };
  }
  const choice = options.transport ?? 'auto';
  if (choice === 'h2') return { session: await openHttp2(url, options.certHash), carrier: 'http/2', resets: true };
  const deno = await findDeno();
  if ('reason' in deno) {
    if (choice === 'h3') throw new Error(`no HTTP/3 in this process: ${deno.reason}`);
    return { session: await openHttp2(url, options.certHash), carrier: 'http/2', resets: true };
  }
  const h3 = await openHttp3Session(url, { certHash: options.certHash });
  if (choice === 'h3') return { session: h3, carrier: 'http/3', resets: false };
  return race(h3, () => openHttp2(url, options.certHash));
}

/**
 * `auto`: HTTP/3 first; HTTP/2 too only once HTTP/3 has failed or used up its head
 * start; then the first session ready wins and the other is closed.
 */
async function race(h3: WtSession, openH2: () => Promise<WtSession>): Promise<OpenedSession> {
  let h2: WtSession | undefined;
  const h3Ready = h3.ready.then(() => 'http/3' as const);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const headStart = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), HTTP3_HEAD_START_MS)));
  const early = await Promise.race([h3Ready.catch(() => undefined), headStart]);
  clearTimeout(timer);
  // Ready within its head start: no HTTP/2 session is opened at all.
  if (early === 'http/3') return { session: h3, carrier: 'http/3', resets: false };
  const h2Ready = (async () => {
    h2 = await openH2();
    await h2.ready;
    return 'http/2' as const;
  })();
  const winner = await Promise.any([h3Ready, h2Ready]).catch(() => undefined);
  if (winner === 'http/3') {
    void h2Ready.then(() => h2?.close(), () => undefined);
    return { session: h3, carrier: 'http/3', resets: false };
  }
  h3.close();
  // Neither: HTTP/2's own failure says the most (a refused port, a wrong certificate).
  if (winner === undefined) await h2Ready;
  return { session: h2!, carrier: 'http/2', resets: true };
}

async function openHttp2(url: string, certHash: string | undefined): Promise<WtSession> {
  const lib = await loadWebTransport();
  const init: Record<string, unknown> = { forceReliable: true, ...webTransportWindows };
  if (certHash) init['serverCertificateHashes'] = [pinnedCertificate(certHash)];
  const wt = new lib.WebTransport(url, init);
  // A failed handshake also rejects `closed`; callers learn of it through `ready`.
  wt.closed.catch(() => undefined);
  return wt;
}
