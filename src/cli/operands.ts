import type { Command, Option } from 'commander';

/**
 * The index of the first operand in `args` from `from` on, stepping over the options
 * `options` knows and the values they take (`--url X`, `--url=X`, `-e K=V`, `-ieK=V`).
 * A `--` is an operand boundary and is returned as is.
 */
export function firstOperand(args: readonly string[], from: number, options: readonly Option[]): number {
  const takesValue = (flag: string): boolean => {
    const option = options.find((o) => o.long === flag || o.short === flag);
    return option !== undefined && (option.required || option.optional);
  };
  for (let i = from; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--' || arg === '-' || !arg.startsWith('-')) return i;
    if (arg.startsWith('--')) {
      if (!arg.includes('=') && takesValue(arg)) i++;
      continue;
    }
    // A cluster of short flags: the first that takes a value takes the rest of the cluster, or the next word.
    for (let k = 1; k < arg.length; k++) {
      if (!takesValue(`-${arg[k]!}`)) continue;
      if (k === arg.length - 1) i++;
      break;
    }
  }
  return args.length;
}

/** The subcommand named in `args` (the words after the program's path), skipping global options. */
export function subcommandOf(args: readonly string[], program: Command): string | undefined {
  return args[firstOperand(args, 0, program.options)];
}

/**
 * docker exec's rule, that everything after the container is the command, flags included:
 * `callwire exec web ls -l` runs `ls -l`. Commander would take `-l` (or exec's own `-e`)
 * as an option of ours, so a `--` goes after the container when the caller left it out.
 */
export function execCommandAfterContainer(argv: readonly string[], program: Command): string[] {
  const args = argv.slice(2);
  const sub = firstOperand(args, 0, program.options);
  const exec = program.commands.find((c) => c.name() === 'exec');
  if (args[sub] !== 'exec' || exec === undefined) return [...argv];
  const container = firstOperand(args, sub + 1, [...exec.options, ...program.options]);
  if (container >= args.length - 1 || args[container] === '--' || args[container + 1] === '--') return [...argv];
  return [...argv.slice(0, 2), ...args.slice(0, container + 1), '--', ...args.slice(container + 1)];
}
