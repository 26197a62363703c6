/**
 * The WebTransport library, as callwire uses it on both sides: its typings, the
 * windows both ends assume, and the client session setup. Node only.
 */
export { loadWebTransport, type WtLibrary, type WtServer, type WtSession, type WtSessionAnswer, type WtStream, type WtCloseInfo } from './types.js';
export { webTransportWindows } from './windows.js';
export { openWebTransport, type OpenOptions } from './connect.js';
