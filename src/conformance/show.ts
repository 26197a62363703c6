import type { RawEvent } from './events.js';

/** One event as a failure message quotes it: a frame as JSON cut at 200 characters, bytes by their length. */
export function show(event: RawEvent): string {
  switch (event.kind) {
    case 'frame': {
      const text = JSON.stringify(event.value, (_k, v: unknown) => (v instanceof Uint8Array ? `<${v.byteLength} bytes>` : v));
      return text && text.length > 200 ? `${text.slice(0, 200)}…` : (text ?? 'undefined');
    }
    case 'close':
      return `close ${event.code}${event.reason ? ` (${event.reason})` : ''}`;
    case 'stream-reset':
      return `stream reset (${event.id ?? 'no id'})`;
    case 'stream-end':
      return `stream ended (${event.id ?? 'no id'})`;
    case 'undecodable':
      return `undecodable frame: ${event.error}`;
    case 'ping':
      return 'ping';
  }
}
