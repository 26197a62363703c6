import type { Dispatcher } from '../../dispatcher/index.js';
import { listenWebTransport } from '../../transports/index.js';
import { certificateSha256, selfSignedCertificate } from '../certificate.js';
import type { Teardown } from '../teardown.js';
import type { Access } from './access.js';
import type { Connections } from './connections.js';
import { startHttp3Edge } from './http3-edge.js';
import { urlHost, type TlsOptions } from './http-listeners.js';

export interface WebTransportOptions {
  /** WebTransport port, or false for none. Default 7071. */
  readonly webTransportPort?: number | false;
  /** HTTP/3 when a provider is present (the native fails-components part, else the Deno edge); false: never. Default true. */
  readonly http3?: boolean;
}

export interface WebTransportServing {
  readonly wtUrl: string | undefined;
  /** SHA-256 (hex) of the certificate WebTransport serves, for clients to pin. */
  readonly certHash: string | undefined;
  readonly certNotAfter: Date | undefined;
  readonly http3: { readonly on: boolean; readonly reason: string };
}

const OFF: WebTransportServing = { wtUrl: undefined, certHash: undefined, certNotAfter: undefined, http3: { on: false, reason: 'WebTransport is off' } };

/** WebTransport over HTTP/2 on its port and, when a provider is present, over HTTP/3 on the same port's UDP. */
export async function startWebTransport(
  options: WebTransportOptions & { readonly tls?: TlsOptions | undefined },
  parts: { readonly access: Access; readonly dispatcher: Dispatcher; readonly connections: Connections },
  teardown: Teardown,
): Promise<WebTransportServing> {
  if (options.webTransportPort === false) return OFF;
  const { access, dispatcher, connections } = parts;
  const { host } = access;
  const cert = options.tls
    ? { ...options.tls, sha256: certificateSha256(options.tls.certPem), notAfter: undefined }
    : await selfSignedCertificate([host, 'localhost', '127.0.0.1']);
  const wt = teardown.use(
    await listenWebTransport({
      dispatcher,
      originPolicy: access.originPolicy,
      keepaliveMs: connections.keepaliveMs,
      host,
      port: options.webTransportPort ?? 7071,
      certPem: cert.certPem,
      keyPem: cert.keyPem,
      guard: connections.guard,
      http3: options.http3 !== false,
    }),
  );
  const http3 =
    options.http3 === false
      ? { on: false, reason: 'turned off (http3: false)' }
      : wt.http3
        ? { on: true, reason: 'the native fails-components transport' }
        : await startHttp3Edge(
            {
              dispatcher,
              host,
              port: wt.port,
              certPem: cert.certPem,
              keyPem: cert.keyPem,
              keepaliveMs: connections.keepaliveMs,
              guard: connections.guard,
              // Over HTTP/3 the Origin is not visible: without tokens, only the fresh certificate's hash admits a caller (docs/http3.md "Server").
              anonymousIdentity: options.tls ? null : access.anonymousIdentity,
            },
            wt.http3Reason,
            teardown,
          );
  return { wtUrl: `https://${urlHost(host)}:${wt.port}/callwire`, certHash: cert.sha256, certNotAfter: cert.notAfter, http3 };
}
