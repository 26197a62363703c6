import { findDeno } from '../../src/webtransport/index.js';

/** Set to anything: the tests (and .ci/run's check) behave as on a machine where the optional Deno package did not install. */
export const WITHOUT_DENO_ENV = 'CALLWIRE_TEST_WITHOUT_DENO';

/**
 * The Deno binary the tests' HTTP/3 runs on, or why there is none. One home for the
 * question, so that the tests' skips and .ci/run's check (which fails CI without it)
 * cannot disagree; the env var lets either be seen as it is on such a machine.
 */
export async function denoForTests(): Promise<{ path: string } | { reason: string }> {
  if (process.env[WITHOUT_DENO_ENV]) return { reason: `${WITHOUT_DENO_ENV} is set (as if the optional dependency deno had not installed)` };
  return findDeno();
}
