import type { Command } from 'commander';
import { RpcError, type CallOptions, type Client } from '../../client-node/index.js';
import { classify, outcomes, precedence, type Classified } from '../../outcome/index.js';
import { connectFrom, globalFlags, parseDuration, writeErr } from '../context.js';
import { addResumeOptions, announceReconnects, resumeOf } from '../resume.js';
import { signalController } from '../signals.js';
import { copyIn } from '../cp/copy-in.js';
import { copyOut } from '../cp/copy-out.js';
import type { CopyResult } from '../cp/copy-options.js';
import { ArchiveRefused } from '../cp/refusals.js';
import { escapeControls, escapeName } from '../cp/names.js';
import { copyDirection, parseEndpoint } from '../cp/operands.js';
import { StatusLine } from '../cp/progress.js';
import { CopyError } from '../cp/rules.js';
import { humanSize, parseByteSize } from '../cp/sizes.js';

interface CpFlags {
  archive?: boolean;
  followLink?: boolean;
  quiet?: boolean;
  maxBytes: string;
  resume?: string | boolean;
}

/** What one copy out may take: enough for any single artefact people copy (docs/security.md "Copies"). */
const DEFAULT_MAX_BYTES = '64GiB';

/**
 * `docker cp` from anywhere (docs/cli.md "callwire cp"): files out of and into a container
 * through the engine's archive API, resumable, checked end to end, extracted safely.
 * Exit codes are exec's, as docker cp's are docker's.
 */
export function registerCp(program: Command): void {
  const command = program.command('cp <src> <dest>');
  addResumeOptions(command)
    .description("copy files between a container and the local filesystem, as docker cp: CONTAINER:PATH (HOST/NAME:PATH in a fleet) on one side; '-' is a tar stream on stdin or stdout")
    .option('-a, --archive', "keep the files' uid and gid (a copy into a container)")
    .option('-L, --follow-link', 'copy what a symlink source names, under the link\'s name')
    .option('-q, --quiet', 'no progress and no last line (a pipe never gets them)')
    .option('--max-bytes <size>', 'the largest archive a copy out takes, e.g. 512MiB; a larger one is refused', DEFAULT_MAX_BYTES)
    .addHelpText('after', '\nExamples:\n  callwire cp web:/var/log/app.log ./\n  callwire cp ./dist web:/srv/\n  callwire cp web:/etc - | tar t')
    .action(async (srcArg: string, dstArg: string, opts: CpFlags, cmd: Command) => {
      const flags = globalFlags(cmd);
      const stop = signalController();
      let client: Client | undefined;
      let result: CopyResult | undefined;
      let failure: { classified: Classified; error: unknown } | undefined;
      try {
        const src = parseEndpoint(srcArg);
        const dst = parseEndpoint(dstArg);
        const { direction, container } = copyDirection(src, dst);
        const maxBytes = parseByteSize(opts.maxBytes, '--max-bytes');
        const deadlineMs = flags.timeout ? parseDuration(flags.timeout, '--timeout') : undefined;
        const resume = resumeOf(opts.resume);
        client = await connectFrom(flags, stop.signal, resume);
        const progress = new StatusLine(opts.quiet !== true && process.stderr.isTTY);
        // Before the notice of a lost connection is written, on a line of its own.
        client.on('reconnecting', () => progress.clear());
        if (resume) announceReconnects(client, resume, () => false);
        const call: CallOptions = { signal: stop.signal, ...(deadlineMs === undefined ? {} : { deadlineMs }) };
        const options = { followLink: opts.followLink === true, copyUIDGID: opts.archive === true, progress, maxBytes, call };
        if (direction === 'out') {
          const from = src as { path: string };
          result = await copyOut(client, container, from.path, dst.kind === 'local' ? dst.path : undefined, options);
        } else {
          const to = dst as { path: string };
          result = await copyIn(client, container, src.kind === 'local' ? src.path : undefined, to.path, options);
        }
      } catch (error) {
        failure = { classified: classifyCopy(error), error };
      } finally {
        stop.dispose();
        await client?.close().catch(() => undefined);
      }
      if (failure && stop.which()) failure.classified = precedence([failure.classified, { outcome: 'cancelled', boundary: 'execution' }])!;
      if (failure) {
        const error = failure.error;
        const rpc = error instanceof RpcError ? error : undefined;
        writeErr(`Error: ${escapeControls(error instanceof Error ? error.message : String(error))}${rpc ? ` (${rpc.code})` : ''}`);
        process.exitCode = outcomes[failure.classified.outcome].execExit;
        return;
      }
      if (result && opts.quiet !== true && process.stderr.isTTY) writeErr(summary(result));
      process.exitCode = 0;
    });
}

/** A refused archive or a path the rules refuse is the copy's failure (exec's 125); the rest as every call's. */
function classifyCopy(error: unknown): Classified {
  if (error instanceof ArchiveRefused || error instanceof CopyError) return { outcome: 'operation_failure', boundary: 'execution' };
  return classify(error);
}

/** docker cp's last line. */
function summary(result: CopyResult): string {
  const transferred = result.contentBytes === result.transferredBytes ? '' : ` (transferred ${humanSize(result.transferredBytes)})`;
  return `Successfully copied ${humanSize(result.contentBytes)}${transferred} to ${escapeName(result.destination)}`;
}
