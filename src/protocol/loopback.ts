/**
 * The loopback names and addresses of spec §10.1: a callee listening on loopback
 * takes only these in `Host` (and those its operator allows), against DNS rebinding.
 */
export function isLoopbackName(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'localhost' || n.endsWith('.localhost') || n === '::1' || n === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(n);
}
