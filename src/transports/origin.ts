import { isLoopbackName } from '../protocol/index.js';

/**
 * Who may open a connection from a browser (spec/PROTOCOL.md §10.1).
 *
 * Browsers apply no CORS to WebSocket or WebTransport, so any page the user opens
 * can reach a loopback server. Two checks close that, as Jupyter, VS Code's server
 * and the Docker and Kubernetes API servers do:
 * - `Origin`: absent (not a browser) or same-origin passes; any other origin must be
 *   listed. Only a browser can be made to send a victim's cookies-free request from
 *   a foreign page, and a browser always sends a serialized origin or `null`.
 * - `Host`, when bound to loopback: a DNS-rebinding page reaches 127.0.0.1 under its
 *   own name, which the browser puts in `Host`; only loopback names pass.
 */
export interface OriginPolicy {
  /** Origins allowed besides the server's own, e.g. `https://app.example`; `*` allows any. */
  readonly allowOrigins: readonly string[];
  /** Host names allowed besides loopback ones, when the server listens on loopback. */
  readonly allowHosts: readonly string[];
  /** The server listens on loopback only: check `Host` against DNS rebinding. */
  readonly checkHost: boolean;
}

/** No origin but the server's own, and no Host check: what a transport assumes when given no policy. */
export const SAME_ORIGIN_ONLY: OriginPolicy = { allowOrigins: [], allowHosts: [], checkHost: false };

export type Verdict = { readonly ok: true } | { readonly ok: false; readonly status: 403; readonly reason: string };

const OK: Verdict = { ok: true };

export function checkBrowserRequest(policy: OriginPolicy, origin: string | undefined, host: string | undefined): Verdict {
  const hostName = host === undefined ? undefined : hostOf(host);
  if (policy.checkHost) {
    if (hostName === undefined) return refuse('a Host header is required');
    if (!isLoopbackName(hostName) && !policy.allowHosts.includes(hostName)) {
      return refuse(`Host "${hostName}" is not a loopback name; allow it with --allow-host`);
    }
  }
  if (origin === undefined || origin === '') return OK;
  const serialized = parseOrigin(origin);
  // Not a serialized origin: no browser sends that (e.g. the Node WebTransport library sends a bare host).
  if (serialized === 'not-an-origin') return OK;
  if (policy.allowOrigins.includes('*')) return OK;
  if (serialized !== 'null') {
    if (host !== undefined && serialized.origin === originAt(serialized.scheme, host)) return OK; // same origin
    if (policy.allowOrigins.some((allowed) => sameOrigin(allowed, serialized.origin))) return OK;
  }
  return refuse(`origin ${truncate(origin)} is not allowed; allow it with --allow-origin`);
}

/** `*` lets every web page call, so it is only accepted where callers need tokens. */
export function validatePolicy(policy: OriginPolicy, hasTokens: boolean): void {
  if (policy.allowOrigins.includes('*') && !hasTokens) {
    throw new Error('--allow-origin "*" needs tokens: without them any web page the user opens could run commands');
  }
  for (const origin of policy.allowOrigins) {
    if (origin !== '*' && parseOrigin(origin) === 'not-an-origin') throw new Error(`--allow-origin takes an origin like https://app.example:8443, not "${origin}"`);
  }
}

function parseOrigin(text: string): { origin: string; scheme: string } | 'null' | 'not-an-origin' {
  if (text === 'null') return 'null';
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return 'not-an-origin';
  try {
    const url = new URL(text);
    if (url.origin === 'null') return 'null';
    return { origin: url.origin, scheme: url.protocol };
  } catch {
    return 'not-an-origin';
  }
}

function sameOrigin(allowed: string, origin: string): boolean {
  const parsed = parseOrigin(allowed);
  return typeof parsed === 'object' && parsed.origin === origin;
}

/** The origin a page served by this very server, reached through `host`, would have. */
function originAt(scheme: string, host: string): string | undefined {
  try {
    return new URL(`${scheme}//${host}`).origin;
  } catch {
    return undefined;
  }
}

function hostOf(host: string): string | undefined {
  try {
    const name = new URL(`http://${host}`).hostname;
    return name.startsWith('[') ? name.slice(1, -1) : name;
  } catch {
    return undefined;
  }
}

function refuse(reason: string): Verdict {
  return { ok: false, status: 403, reason };
}

function truncate(text: string): string {
  return text.length <= 100 ? text : `${text.slice(0, 100)}…`;
}
