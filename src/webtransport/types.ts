/**
 * The parts of @fails-components/webtransport callwire uses, typed once: the
 * package's own typings do not describe its Node server.
 */
export interface WtStream {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
}

export interface WtCloseInfo {
  closeCode?: number;
  reason?: string;
}

/** A session, as the server accepts it or the client opens it. */
export interface WtSession {
  readonly ready: Promise<void>;
  readonly closed: Promise<WtCloseInfo | undefined>;
  readonly incomingBidirectionalStreams: ReadableStream<WtStream>;
  createBidirectionalStream(options?: { waitUntilAvailable?: boolean }): Promise<WtStream>;
  close(info?: WtCloseInfo): void;
}

export interface WtServer {
  setRequestCallback(callback: (request: { header: Record<string, string | undefined> }) => Promise<WtSessionAnswer>): void;
  startServer(): void;
  stopServer(): void;
  readonly ready: Promise<void>;
  readonly port: number | null;
  sessionStream(path: string): ReadableStream<WtSession>;
}

/** A session request's answer: accept it on `path`, or refuse it with an HTTP status. */
export type WtSessionAnswer = { status: 200; path: string; userData: Record<string, never> } | { status: number };

export interface WtLibrary {
  readonly WebTransport: new (url: string, init: Record<string, unknown>) => WtSession;
  readonly Http2Server: new (args: Record<string, unknown>) => WtServer;
  readonly Http3Server: new (args: Record<string, unknown>) => WtServer;
  /** Settles once the library's optional native HTTP/3 part has loaded or failed to. */
  readonly quicheLoaded?: Promise<unknown>;
}

/** Loaded on first use: it is Node-only, and the browser bundle must not need it. */
export async function loadWebTransport(): Promise<WtLibrary> {
  return (await import('@fails-components/webtransport')) as unknown as WtLibrary;
}
