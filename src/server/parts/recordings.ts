import type { Logger, ObserveCalls } from '../../dispatcher/index.js';
import { defaultRecordingPolicy, sessionRecorder, type RecordingPolicy } from '../session-recorder.js';
import type { Teardown } from '../teardown.js';

export interface RecordingOptions {
  /** Record every exec with a terminal as an asciicast v2 file in this directory (created mode 0700). */
  readonly recordDir?: string;
  /** The recordings' cap, the free space kept for the audit log, and whether a session whose recording stops is ended (defaults: `defaultRecordingPolicy`). */
  readonly recordPolicy?: Partial<RecordingPolicy>;
}

/** The terminal sessions' recorder; on close it writes what its open recordings hold. */
export function startRecordings(options: RecordingOptions, logger: Logger, teardown: Teardown): ObserveCalls | undefined {
  if (options.recordDir === undefined) return undefined;
  return teardown.use(sessionRecorder(options.recordDir, logger, { ...defaultRecordingPolicy, ...options.recordPolicy })).observe;
}
