import type { Rule } from 'eslint';

/** What browsers load: every file they reach is held platform-free. */
export const browserEntries: readonly string[];
declare const layers: Rule.RuleModule;
export default layers;
