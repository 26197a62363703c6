import { z } from 'zod';
import { bytesSchema } from './bytes.js';
import { containerAccess } from './docker-access.js';
import { dockerErrors } from './docker-errors.js';
import { containerReference } from './engine-references.js';
import { placed } from './placement.js';

/** The environment variable that marks an exec's processes for its kill (spec §12, EXEC-5): the server's, never the caller's. */
export const EXEC_MARK_VARIABLE = 'CALLWIRE_EXEC';

/** `KEY=VALUE`, as `docker exec -e` takes it: the one place this rule is written. */
export const envEntry = z
  .string()
  .regex(/^[^=]+=/, 'must be KEY=VALUE')
  .refine((entry) => !entry.startsWith(`${EXEC_MARK_VARIABLE}=`), `${EXEC_MARK_VARIABLE} is set by the server: it marks the exec's processes for the kill`);

const streamName = z.enum(['stdout', 'stderr']);

/** One output frame of exec: text (encoding utf8) or bytes (encoding binary). */
export const execOutputFrame = z.union([
  z.strictObject({ stream: streamName, text: z.string() }).describe('output, encoding utf8'),
  z.strictObject({ stream: streamName, data: bytesSchema }).describe('output, encoding binary'),
]);

/** The terminal frame (spec §12, EXEC-1): the last value before call.completed. */
export const execTerminalFrame = z
  .strictObject({
    exitCode: z.number().int().min(-2147483648).max(2147483647),
    terminal: z.literal(true),
    stdoutBytes: z.number().int().min(0),
    stderrBytes: z.number().int().min(0),
  })
  .describe('the terminal frame: last value before call.completed; stop on terminal: true');

export type ExecOutputFrame = z.output<typeof execOutputFrame>;
export type ExecTerminalFrame = z.output<typeof execTerminalFrame>;

/** EXEC-4: the terminal flag decides, never the mere presence of `exitCode`. */
export function isTerminalFrame(frame: unknown): frame is ExecTerminalFrame {
  return typeof frame === 'object' && frame !== null && (frame as { terminal?: unknown }).terminal === true;
}

/** A pseudo-terminal's size, as `docker exec -t` and `stty size` see it. */
export const ttySize = z.strictObject({
  cols: z.number().int().min(1).max(65535),
  rows: z.number().int().min(1).max(65535),
});

/** The signals an exec's process may be sent by name (spec §12, EXEC-9). */
export const execSignal = z.enum(['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGKILL', 'SIGUSR1', 'SIGUSR2', 'SIGTERM', 'SIGCONT', 'SIGSTOP', 'SIGTSTP', 'SIGWINCH']);

/** One item of exec's input stream (spec §12, EXEC-8): stdin bytes, a resize, or a signal, applied in order. */
export const execInputItem = z.union([
  z.strictObject({ data: bytesSchema }).describe("bytes for the command's stdin (input stdin: 'stream'); call.end closes it"),
  z.strictObject({ resize: ttySize }).describe('the terminal was resized (input tty)'),
  z.strictObject({ signal: execSignal }).describe("send this signal to the command's process"),
]);
export type ExecInputItem = z.input<typeof execInputItem>;

export const execContract = placed({
  name: 'docker/container/exec',
  kind: 'subscription',
  commandEnd: (item) => (isTerminalFrame(item) ? { exitCode: item.exitCode, stdoutBytes: item.stdoutBytes, stderrBytes: item.stderrBytes } : undefined),
  description: [
    'Runs a command in a running container, like docker exec, and streams what it prints as it prints it, then its exit code.',
    'Output: items {stream: "stdout" or "stderr", text} (bytes as {stream, data} with encoding "binary"); ' +
      'the last is {exitCode, terminal: true, stdoutBytes, stderrBytes}.',
    'Input: set stdin to give the command bytes to read, or "stream" to send them as you go ({data} items). ' +
      'Set tty {cols, rows} for an interactive terminal, like docker exec -it: stdout and stderr then arrive together as stdout; ' +
      'send {resize} items to resize it, and {signal} items to signal the command (signals need the Docker engine on the server\'s machine).',
    'Stopping: cancel the call or disconnect, and the command is killed with everything it started, even in the background ' +
      '(setsid, nohup, a double fork): the server finds them by a CALLWIRE_EXEC variable it sets, which env may not set. ' +
      'A program started with a cleared environment (env -i, unset) can escape: always with a remote engine, and with a local one once its parent has ended. ' +
      'Unless the server runs as root and sees the container\'s processes, the kill runs inside the container and needs sh, tr and grep there. ' +
      'When the command ends by itself, whatever it left running in the background keeps running, as with docker exec. ' +
      'Failed kills are logged and counted in services/stats.',
  ].join('\n\n'),
  input: z.strictObject({
    containerId: containerReference,
    cmd: z.array(z.string()).min(1, 'must name a command'),
    env: z.array(envEntry).optional(),
    workingDir: z.string().min(1).optional(),
    user: z.string().min(1).optional(),
    tty: z
      .union([z.literal(false), ttySize], { error: 'tty is false, or the terminal\'s size {cols, rows} for an interactive session (as docker exec -t)' })
      .optional()
      .describe('a pseudo-terminal of this size; stdout and stderr then arrive merged, as stdout'),
    stdin: z
      .union([bytesSchema, z.literal('stream')])
      .optional()
      .describe("bytes for the command's stdin, then end of file; or 'stream': stdin comes as the call's input stream of {data} items, as it arrives"),
    encoding: z.enum(['utf8', 'binary']).default('utf8'),
  }),
  inputStream: execInputItem,
  output: z.union([...execOutputFrame.options, execTerminalFrame]),
  errors: dockerErrors,
  access: containerAccess('exec'),
  placement: { kind: 'container' },
});
