import type { ServerHttp2Stream } from 'node:http2';
import type { WtSession } from '../webtransport/index.js';

/** How a WebTransport session ended, as its calls must hear it (spec §4.9). */
export type WtSessionEnd = 'clean' | 'lost';

/** Told before we close the session ourselves: that end is a clean one. */
export interface SessionEndWatch {
  closing(): void;
}

/**
 * Classifies the end of a WebTransport-over-HTTP/2 session of the library's server:
 * `clean` when either side closed it (a CLOSE_WEBTRANSPORT_SESSION capsule, or our own
 * `close`), `lost` when its CONNECT stream went without one (the TCP connection broke,
 * the keepalive found it silent). `onEnd` is called once, and for a loss before the
 * library errors the session's streams: a stream failing with its session is then no
 * caller's reset of that one stream (WT-2), and finds its call handed to the resume
 * registry, not to be cancelled.
 */
export function watchHttp2SessionEnd(wt: WtSession, onEnd: (how: WtSessionEnd) => void): SessionEndWatch {
  let closing = false;
  let ended = false;
  const end = (how: WtSessionEnd): void => {
    if (ended) return;
    ended = true;
    onEnd(how);
  };
  // The library's internals: its session's CONNECT stream, and its state ('connected' until it hears a close).
  const internal = wt as unknown as { objint?: { stream?: ServerHttp2Stream }; state?: string };
  const connect = internal.objint?.stream;
  // Prepended: this runs before the library's own listener turns the stream's end into a session close.
  const streamGone = (): void => end(closing || internal.state !== 'connected' ? 'clean' : 'lost');
  connect?.prependOnceListener('close', streamGone);
  connect?.prependOnceListener('error', streamGone);
  // Without the CONNECT stream (the library changed), every end is a close, as before §4.9.
  void wt.closed.catch(() => undefined).then(() => end('clean'));
  return {
    closing: () => {
      closing = true;
    },
  };
}
