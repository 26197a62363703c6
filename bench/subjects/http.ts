/** callwire's plain HTTP (spec §5.6): one POST per call, over fetch's keep-alive pool. */
import type { Subject } from '../subject.js';

export function httpSubject(name: string, wsUrl: string, peers: readonly string[]): Subject {
  const url = `${wsUrl.replace(/^ws/, 'http').replace(/\/callwire$/, '')}/call/bench/echo`;
  const body = JSON.stringify({ text: 'hello bench' });
  return {
    name,
    peers,
    echo: async () => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      return res.json();
    },
    close: async () => undefined,
  };
}
