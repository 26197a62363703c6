/** Every file reached from `entries` (relative to `cwd`), mapped to its chain of imports from its entry point. */
export function browserReach(cwd: string, entries: readonly string[]): Map<string, string[]>;
