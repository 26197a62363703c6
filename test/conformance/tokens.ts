/** Tokens of the servers the conformance tests start: the runner's (all scopes) and one with none. */
export const RUNNER_TOKEN = 'conformance-runner-token-0123';
export const SCOPELESS_TOKEN = 'conformance-scopeless-token-0123';

/**
 * The two tokens, the runner's under `subject`. A run with a subject of its own finds the
 * containers it left by their owner label (spec §12), whatever other runs share the engine.
 */
export function conformanceTokensFor(subject: string): { token: string; subject: string; scopes: string[] }[] {
  return [
    { token: RUNNER_TOKEN, subject, scopes: ['*'] },
    { token: SCOPELESS_TOKEN, subject: 'nobody', scopes: [] },
  ];
}

export const conformanceTokens = conformanceTokensFor('conformance');
