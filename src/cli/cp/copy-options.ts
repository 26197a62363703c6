import type { CallOptions } from '../../client-node/index.js';
import type { StatusLine } from './progress.js';

/** What both directions of a copy take from the command line. */
export interface CopyOptions {
  /** -L: copy what a symlink source names. */
  readonly followLink: boolean;
  /** -a: keep the archive's owners (a copy into a container). */
  readonly copyUIDGID: boolean;
  /** Where progress is drawn (shown on a terminal, without -q). */
  readonly progress: StatusLine;
  /** The most tar bytes taken or entry bytes extracted (--max-bytes). */
  readonly maxBytes: number;
  /** The call's signal, resume and deadline. */
  readonly call: CallOptions;
}

/** What the last line reports: the content's size, the tar bytes that went, and where. */
export interface CopyResult {
  readonly contentBytes: number;
  readonly transferredBytes: number;
  readonly destination: string;
}
