import type { Command } from 'commander';
import type { Client } from '../client/index.js';
import { CallerInputError } from '../outcome/index.js';
import { writeErr } from './context.js';

const DEFAULT_RESUME_SECONDS = '30';

/** `--resume <seconds>` and `--no-resume`, for commands whose call may outlive a lost connection (spec §4.9). */
export function addResumeOptions(command: Command): Command {
  return command
    .option('--resume <seconds>', 'if the connection is lost, reconnect and resume the call; the server keeps it this long (it may cap it)', DEFAULT_RESUME_SECONDS)
    .option('--no-resume', 'a lost connection ends the call (its process is killed)');
}

/** The grace the flags ask for, or none with `--no-resume`. */
export function resumeOf(flag: string | boolean | undefined): { graceMs: number } | undefined {
  if (flag === false) return undefined;
  const text = typeof flag === 'string' ? flag : DEFAULT_RESUME_SECONDS;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new CallerInputError(`--resume "${text}": must be a number of seconds above 0 (or --no-resume)`);
  return { graceMs: Math.round(seconds * 1000) };
}

/**
 * One line on stderr when the connection is lost and one when the call goes on: never
 * on stdout, which carries the command's bytes. `raw`: the terminal is in raw mode,
 * where a line needs its carriage return.
 */
export function announceReconnects(client: Client, resume: { graceMs: number }, raw: () => boolean): void {
  const line = (text: string): void => writeErr(raw() ? `\r\n${text}\r` : text);
  client.on('reconnecting', () => line(`callwire: connection lost; reconnecting (the call is kept for ${Math.round(resume.graceMs / 1000)} s)…`));
  client.on('resumed', () => line('callwire: reconnected; the call resumed'));
}
