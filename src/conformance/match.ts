/**
 * Matchers for expected frames (spec/conformance/README.md):
 *   "$any" anything; "$string" / "$number" / "$boolean" / "$bytes" a value of that type;
 *   {"$regex": "…"} a string matching; {"$absent": true} the key must be missing;
 *   {"$contains": [m…], "$notContains": [m…]} an array with items matching (and none matching);
 *   {"$lt": n} / {"$gt": n} a number below / above n;
 *   objects match as subsets unless they hold "$exact": true; arrays match element by element.
 * Returns undefined on a match, or the path and reason of the first mismatch.
 */
export function mismatch(expected: unknown, actual: unknown, path = '$'): string | undefined {
  if (expected === '$any') return undefined;
  if (expected === '$string') return typeof actual === 'string' ? undefined : `${path}: expected a string, got ${show(actual)}`;
  if (expected === '$number') return typeof actual === 'number' ? undefined : `${path}: expected a number, got ${show(actual)}`;
  if (expected === '$boolean') return typeof actual === 'boolean' ? undefined : `${path}: expected a boolean, got ${show(actual)}`;
  if (expected === '$bytes') return actual instanceof Uint8Array ? undefined : `${path}: expected bytes, got ${show(actual)}`;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected an array, got ${show(actual)}`;
    if (actual.length !== expected.length) return `${path}: expected ${expected.length} items, got ${actual.length}`;
    for (let i = 0; i < expected.length; i++) {
      const m = mismatch(expected[i], actual[i], `${path}[${i}]`);
      if (m) return m;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    const spec = expected as Record<string, unknown>;
    if (typeof spec['$regex'] === 'string') {
      return typeof actual === 'string' && new RegExp(spec['$regex']).test(actual) ? undefined : `${path}: expected /${spec['$regex']}/, got ${show(actual)}`;
    }
    if (Array.isArray(spec['$contains'])) {
      if (!Array.isArray(actual)) return `${path}: expected an array, got ${show(actual)}`;
      for (const want of spec['$contains']) {
        if (!actual.some((item) => mismatch(want, item) === undefined)) return `${path}: no item matches ${show(want)}`;
      }
      const none = spec['$notContains'];
      if (Array.isArray(none)) {
        for (const unwanted of none) if (actual.some((item) => mismatch(unwanted, item) === undefined)) return `${path}: an item matches ${show(unwanted)}`;
      }
      return undefined;
    }
    if (typeof spec['$lt'] === 'number') return typeof actual === 'number' && actual < spec['$lt'] ? undefined : `${path}: expected < ${spec['$lt']}, got ${show(actual)}`;
    if (typeof spec['$gt'] === 'number') return typeof actual === 'number' && actual > spec['$gt'] ? undefined : `${path}: expected > ${spec['$gt']}, got ${show(actual)}`;
    if (typeof spec['$base64'] === 'string') {
      const want = spec['$base64'];
      return actual instanceof Uint8Array && Buffer.from(actual).toString('base64') === want ? undefined : `${path}: expected bytes ${want}, got ${show(actual)}`;
    }
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual) || actual instanceof Uint8Array) return `${path}: expected an object, got ${show(actual)}`;
    const got = actual as Record<string, unknown>;
    for (const [key, value] of Object.entries(spec)) {
      if (key === '$exact') continue;
      if (value !== null && typeof value === 'object' && (value as Record<string, unknown>)['$absent'] === true) {
        if (Object.hasOwn(got, key)) return `${path}.${key}: expected no such key, got ${show(got[key])}`;
        continue;
      }
      if (!Object.hasOwn(got, key)) return `${path}.${key}: missing`;
      const m = mismatch(value, got[key], `${path}.${key}`);
      if (m) return m;
    }
    if (spec['$exact'] === true) {
      const extra = Object.keys(got).filter((k) => !Object.hasOwn(spec, k));
      if (extra.length > 0) return `${path}: unexpected keys ${extra.join(', ')}`;
    }
    return undefined;
  }
  return Object.is(expected, actual) ? undefined : `${path}: expected ${show(expected)}, got ${show(actual)}`;
}

function show(value: unknown): string {
  if (value instanceof Uint8Array) return `<${value.byteLength} bytes>`;
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
