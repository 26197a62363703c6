/**
 * callwire's write batcher (frames of one turn in one writev), which the ceilings use too:
 * a ceiling that writes frame by frame would be a weak one. The bench's one import of it,
 * so where it lives is named once here.
 */
import { protocol } from './built.js';

export const { writeBatcher } = protocol;
/** What the batcher corks: a socket. */
export type Corkable = Parameters<typeof writeBatcher>[0];

/** A `ws` WebSocket's socket, which the `ws` typings do not name. */
export const socketOf = (ws: object): Corkable => (ws as { _socket: Corkable })._socket;
