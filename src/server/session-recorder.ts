import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { RpcError } from '../protocol/index.js';
import type { Logger, ObserveCalls, ObservedCall } from '../dispatcher/index.js';
import { AppendStream } from './append-stream.js';
import { freeBytes, Recording, sizeOf, type RecordingPolicy, type TtySize } from './recording.js';

export type { RecordingPolicy } from './recording.js';

/** The defaults of `serve --record-max-bytes` and `--record-reserve-bytes`; `--record-strict` is off. */
export const defaultRecordingPolicy: RecordingPolicy = { maxBytes: 64 * 1024 * 1024, reserveBytes: 64 * 1024 * 1024, strict: false };
/** What every recording together may hold unwritten (a disk slower than the sessions): past it, the one that adds to it stops. */
const MAX_PENDING_BYTES_ALL_RECORDINGS = 256 * 1024 * 1024;

export interface SessionRecorder {
  readonly observe: ObserveCalls;
  /** Writes what the open recordings hold and closes them. */
  close(): Promise<void>;
}

/**
 * `serve --record DIR` (docs/cli.md "Recording and audit"): every exec with a
 * terminal becomes one asciicast v2 file, which `asciinema play` plays: its output
 * as "o" events and its resizes as "r" events. What the caller types is not
 * recorded: a terminal does not echo a password, and the recording must not hold
 * one either; what the terminal echoed is in the output. Execs without a terminal
 * are not recorded (the audit log has them). Each recording is held to the policy's
 * cap, and none starts or goes on while the disk is under the audit log's reserve.
 */
export function sessionRecorder(dir: string, logger: Logger, policy: RecordingPolicy = defaultRecordingPolicy): SessionRecorder {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const open = new Set<Recording>();
  const streams = new Set<AppendStream>();
  const budget = {
    maxPendingBytes: MAX_PENDING_BYTES_ALL_RECORDINGS,
    pending: () => [...streams].reduce((sum, stream) => sum + stream.pending, 0),
  };
  let serial = 0;
  return {
    observe(call) {
      const tty = ttySizeOf(call);
      if (!tty) return undefined;
      const free = freeBytes(dir);
      if (free !== undefined && free - budget.pending() < policy.reserveBytes) return unrecorded(call, `${dir} has ${free} bytes free, under the ${policy.reserveBytes} kept for the audit log (--record-reserve-bytes)`, policy, logger);
      const path = join(dir, fileName(call.id, ++serial));
      // The bound is the cap: a burst waits for the disk, in order, and only the cap stops it.
      const out = AppendStream.create(path, `the recording ${path}`, policy.maxBytes, logger);
      const recording = new Recording(out, dir, call, tty, policy, budget, logger);
      open.add(recording);
      streams.add(out);
      return recording.observer(() => {
        open.delete(recording);
        streams.delete(out);
      });
    },
    async close() {
      await Promise.all([...open].map((recording) => recording.close()));
    },
  };
}

/** A terminal session that cannot be recorded: logged, and under `strict` ended before it runs on. */
function unrecorded(call: ObservedCall, why: string, policy: RecordingPolicy, logger: Logger): undefined {
  logger.warn('a terminal session is not recorded', { callId: call.id, why, strict: policy.strict });
  if (policy.strict) call.end?.(RpcError.of('UNAVAILABLE', `this session cannot be recorded (${why}); this server ends such a session (--record-strict)`));
  return undefined;
}

/** An exec with a terminal: its operation runs a command and its input asks for a tty of some size. */
function ttySizeOf(call: ObservedCall): TtySize | undefined {
  if (call.operation.commandEnd === undefined) return undefined;
  const input = call.input as { cmd?: unknown; tty?: unknown } | null;
  if (typeof input !== 'object' || input === null || !Array.isArray(input.cmd)) return undefined;
  return sizeOf(input.tty);
}

/**
 * `<UTC time>-<call id>-<serial>.cast`: the call id is the caller's, so it is cut to
 * 40 characters of [A-Za-z0-9_-] (no path, no dot file); the serial keeps two
 * connections' equal ids apart.
 */
function fileName(callId: string, serial: number): string {
  const time = new Date().toISOString().replace(/[:.]/g, '-');
  const id = callId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
  return `${time}-${id}-${serial}.cast`;
}
