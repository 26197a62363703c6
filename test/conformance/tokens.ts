/** Tokens of the servers the conformance tests start: the runner's (all scopes) and one with none. */
export const RUNNER_TOKEN = 'conformance-runner-token-0123';
export const SCOPELESS_TOKEN = 'conformance-scopeless-token-0123';
export const conformanceTokens = [
  { token: RUNNER_TOKEN, subject: 'conformance', scopes: ['*'] },
  { token: SCOPELESS_TOKEN, subject: 'nobody', scopes: [] },
];
