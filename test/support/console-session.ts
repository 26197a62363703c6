import { spawn } from 'node:child_process';

/**
 * A `console` block of the docs as a shell session: `$ ` lines are commands (a trailing
 * `\` continues one), the lines after each are what it prints, stdout and stderr as a
 * terminal shows them. In an expected line `…` stands for any text.
 */
export interface ConsoleStep {
  readonly command: string;
  /** Its line in the block, from 1. */
  readonly line: number;
  readonly expected: readonly string[];
}

export function consoleSteps(block: string): ConsoleStep[] {
  const steps: { command: string; line: number; expected: string[] }[] = [];
  const lines = block.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('$ ')) {
      let command = line.slice(2);
      const at = i + 1;
      while (command.endsWith('\\') && i + 1 < lines.length) command = `${command.slice(0, -1)}${lines[++i]!.trimStart()}`;
      steps.push({ command, line: at, expected: [] });
    } else if (steps.length > 0) {
      steps.at(-1)!.expected.push(line);
    } else if (line.trim() !== '') {
      throw new Error(`console block: output before any command: ${line}`);
    }
  }
  return steps;
}

/** Whether `actual` is the line `expected` shows, `…` matching any text. */
export function lineMatches(expected: string, actual: string): boolean {
  const pattern = expected
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`).test(actual);
}

export interface SessionResult {
  /** What each step printed, by line. */
  readonly outputs: string[][];
  readonly exitCode: number | null;
}

/**
 * Runs the steps one after another in one bash, as typed into a terminal: one shell, so
 * `$?` and variables carry over; stderr joined to stdout; stdin a pipe that stays open
 * (a terminal's does) until the session ends.
 */
export function runSession(steps: readonly ConsoleStep[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<SessionResult> {
  const marker = (i: number): string => `@@readme-step-${i}@@`;
  // Each marker keeps `$?` as the step before it left it.
  const script = ['exec 2>&1', ...steps.flatMap((step, i) => [`__status=$?; printf '\\n%s\\n' '${marker(i)}'; (exit $__status)`, step.command])].join('\n');
  return new Promise((resolve, reject) => {
    const shell = spawn('bash', ['-c', script], { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    shell.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      shell.kill('SIGKILL');
      reject(new Error(`the session did not end within ${options.timeoutMs} ms; it printed:\n${out}`));
    }, options.timeoutMs);
    shell.on('error', reject);
    shell.on('close', (exitCode) => {
      clearTimeout(timer);
      const outputs = steps.map((_, i) => {
        const start = out.indexOf(`\n${marker(i)}\n`);
        if (start === -1) return [];
        const from = start + marker(i).length + 2;
        const end = i + 1 < steps.length ? out.indexOf(`\n${marker(i + 1)}\n`, from) : out.length;
        const text = out.slice(from, end === -1 ? out.length : end);
        const lines = text.split('\n');
        if (lines.at(-1) === '') lines.pop();
        return lines;
      });
      resolve({ outputs, exitCode });
    });
  });
}
