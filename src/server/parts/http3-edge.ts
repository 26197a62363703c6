import { findDeno, startH3Bridge, type H3BridgeOptions } from '../../transports/index.js';
import type { Teardown } from '../teardown.js';

/**
 * HTTP/3 through the Deno edge, when the native provider did not load (`nativeReason`
 * says why) and Deno is installed. An edge that does not start leaves HTTP/3 off,
 * saying why; the server serves on without it.
 */
export async function startHttp3Edge(options: H3BridgeOptions, nativeReason: string, teardown: Teardown): Promise<{ on: boolean; reason: string }> {
  const deno = await findDeno();
  if ('reason' in deno) return { on: false, reason: `${nativeReason}, and ${deno.reason}` };
  try {
    teardown.use(await startH3Bridge(options));
    return { on: true, reason: 'the Deno edge (edge/h3-server-edge.ts)' };
  } catch (error) {
    return { on: false, reason: `the Deno edge did not start: ${error instanceof Error ? error.message : String(error)}` };
  }
}
