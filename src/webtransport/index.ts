/**
 * The WebTransport carriers, as callwire uses them on both sides: the library's
 * typings, the windows both ends assume, the client session setup (HTTP/2 through the
 * library, HTTP/3 through Deno), finding Deno, and the bridge to its edge.
 */
export { loadWebTransport, type WtLibrary, type WtServer, type WtSession, type WtSessionAnswer, type WtStream, type WtCloseInfo } from './types.js';
export { callStreamsAllowed, webTransportWindows } from './windows.js';
export { openWebTransport, type OpenOptions, type OpenedSession, type WtCarrierChoice } from './connect.js';
export { findDeno, spawnEdge, type EdgeProcess } from './deno.js';
export { bridgeLine, bridgeMessages, parseBridgeLine, BridgeMessageError, BRIDGE_LINE_MAX_BYTES, type BridgeMessage, type BridgeMessageKind } from './bridge-protocol.js';
export { BridgeMux, BridgeMuxError, MUX_KIND, MUX_HEADER_BYTES, MUX_MAX_PAYLOAD_BYTES, MUX_STREAM_WINDOW_BYTES, type BridgeMuxOptions, type MuxStream } from './bridge-mux.js';
