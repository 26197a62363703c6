/** The server a command reaches without --url or CALLWIRE_URL: `callwire serve`'s default. */
export const DEFAULT_URL = 'ws://127.0.0.1:7070/callwire';
