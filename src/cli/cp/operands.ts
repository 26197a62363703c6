import { CallerInputError } from '../../outcome/index.js';

/** One side of `callwire cp`: a path in a container, a local path, or `-` (a tar stream on stdin or stdout). */
export type CopyEndpoint = { readonly kind: 'container'; readonly container: string; readonly path: string } | { readonly kind: 'local'; readonly path: string } | { readonly kind: 'stream' };

/**
 * docker cp's reading of an operand (docker/cli splitCpArg): an absolute path is local
 * even with a `:` in it, as is one whose part before the `:` starts with `.`; otherwise
 * `CONTAINER:PATH` (`HOST/NAME:PATH` through a fleet). A container path is relative to
 * the container's root, as docker cp takes it.
 */
export function parseEndpoint(arg: string): CopyEndpoint {
  if (arg === '-') return { kind: 'stream' };
  if (arg.startsWith('/')) return { kind: 'local', path: arg };
  const colon = arg.indexOf(':');
  if (colon < 0 || arg.startsWith('.')) return { kind: 'local', path: arg };
  const container = arg.slice(0, colon);
  const path = arg.slice(colon + 1);
  if (container === '') throw new CallerInputError(`"${arg}": a container path is CONTAINER:PATH`);
  if (path === '') throw new CallerInputError(`"${arg}": name a path in the container after the colon`);
  return { kind: 'container', container, path: path.startsWith('/') ? path : `/${path}` };
}

/** The two operands as a copy out of or into one container; docker cp's refusals for the rest. */
export function copyDirection(src: CopyEndpoint, dst: CopyEndpoint): { readonly direction: 'out' | 'in'; readonly container: string } {
  if (src.kind === 'container' && dst.kind === 'container') throw new CallerInputError('copying between containers is not supported');
  if (src.kind === 'container') return { direction: 'out', container: src.container };
  if (dst.kind === 'container') return { direction: 'in', container: dst.container };
  throw new CallerInputError('must specify at least one container source (CONTAINER:PATH)');
}
