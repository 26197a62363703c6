/**
 * callwire's write batcher (frames of one turn in one writev), which the ceilings use too:
 * a ceiling that writes frame by frame would be a weak one. The bench's one import of it,
 * so where it lives is named once here. Always this build's, also in a `--baseline`
 * server process, whose ceilings nothing measures.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Io from '../src/io/index.js';
import { THIS_DIST } from './built.js';

export const { writeBatcher } = (await import(pathToFileURL(resolve(THIS_DIST, 'io/index.js')).href)) as typeof Io;
/** What the batcher corks: a socket. */
export type Corkable = Parameters<typeof writeBatcher>[0];

/** A `ws` WebSocket's socket, which the `ws` typings do not name. */
export const socketOf = (ws: object): Corkable => (ws as { _socket: Corkable })._socket;
