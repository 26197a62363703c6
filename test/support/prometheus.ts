/**
 * Samples of a Prometheus text exposition (format 0.0.4), keyed by the metric's name
 * and its labels sorted by name: `callwire_calls_total{operation="a",outcome="b"}`.
 * A line that is neither a comment nor a sample fails the parse: a scrape Prometheus
 * could not read must not pass a test.
 */
export function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample: ${line}`);
    const [, name, labelText, value] = match as unknown as [string, string, string | undefined, string];
    const labels: Record<string, string> = {};
    if (labelText) {
      const rest = labelText.replace(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g, (_all, label: string, escaped: string) => {
        labels[label] = escaped.replace(/\\(.)/g, (_e, c: string) => (c === 'n' ? '\n' : c));
        return '';
      });
      if (rest !== '') throw new Error(`labels that do not parse: ${line}`);
    }
    const key = sampleKey(name, labels);
    if (samples.has(key)) throw new Error(`a sample twice: ${key}`);
    samples.set(key, Number(value));
  }
  return samples;
}

/** The key `parseMetrics` files a sample under. */
export function sampleKey(name: string, labels: Readonly<Record<string, string>> = {}): string {
  const names = Object.keys(labels).sort();
  return names.length === 0 ? name : `${name}{${names.map((l) => `${l}=${JSON.stringify(labels[l])}`).join(',')}}`;
}

/** A sample's value, 0 when the scrape has none (a counter not yet incremented). */
export function sample(samples: ReadonlyMap<string, number>, name: string, labels: Readonly<Record<string, string>> = {}): number {
  return samples.get(sampleKey(name, labels)) ?? 0;
}
