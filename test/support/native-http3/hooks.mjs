const NATIVE = '@fails-components/webtransport-transport-http3-quiche';

export async function resolve(specifier, context, next) {
  if (specifier === NATIVE) return { url: new URL('./quiche.mjs', import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
}
