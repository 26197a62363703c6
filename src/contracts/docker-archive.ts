import { z } from 'zod';
import { bytesSchema } from './bytes.js';
import type { CopyEnd } from './contract.js';
import { containerAccess } from './docker-access.js';
import { dockerErrors } from './docker-errors.js';
import { containerReference } from './engine-references.js';
import { placed } from './placement.js';

/**
 * Copying files into and out of a container through the engine's archive API
 * (`HEAD`/`GET`/`PUT /containers/{id}/archive`), so nothing is needed inside the image
 * (spec/PROTOCOL.md §12, "Archives"). The engine reads and writes the container's
 * filesystem; callwire carries the tar bytes under the call's credit, both ways.
 */

/** The longest path a caller may name: Linux's PATH_MAX. */
const PATH_MAX_CHARS = 4096;

/**
 * A path inside a container. Absolute, as `docker cp` resolves a relative one against the
 * container's root before asking; no NUL (the engine's query string would cut it). `..`
 * segments are the engine's to resolve within the container's root, as `docker cp` lets it.
 */
export const containerPath = z
  .string()
  .min(1, 'must name a path')
  .max(PATH_MAX_CHARS, `a path has at most ${PATH_MAX_CHARS} characters`)
  .refine((path) => path.startsWith('/'), 'must be an absolute path inside the container (starting with /)')
  .refine((path) => !path.includes('\0'), 'must not contain a NUL character')
  .describe('an absolute path inside the container');

/** What a path in a container is, as the engine reports it (its `X-Docker-Container-Path-Stat`). */
export const pathStat = z.strictObject({
  name: z.string(),
  size: z.number().int().min(0),
  /** Go's os.FileMode bits, as the engine sends them: permission bits, plus 1<<31 for a directory, 1<<27 for a symlink. */
  mode: z.number().int().min(0).max(0xffffffff),
  /** RFC 3339, as the engine sends it. */
  mtime: z.string(),
  /** A symlink's target, else empty. */
  linkTarget: z.string(),
});
export type PathStat = z.output<typeof pathStat>;

/** The errors of the archive operations: the Docker codes, and a path that is not there. */
export const archiveErrors = {
  ...dockerErrors,
  PATH_NOT_FOUND: {
    description: 'No such file or directory in the container (or its parent directory, for a put).',
    details: z.object({ containerId: z.string(), path: z.string() }),
    httpStatus: 404,
  },
} as const;

/** The last item of a copy, either way: how many tar bytes went and their sha256, for the caller to check end to end. */
export const archiveTerminalFrame = z
  .strictObject({
    terminal: z.literal(true),
    bytes: z.number().int().min(0),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .describe('the terminal frame: the tar stream\'s length and sha256; last value before call.completed');
export type ArchiveTerminalFrame = z.output<typeof archiveTerminalFrame>;

/** A copy's end, read from its terminal frame: the audit log's byte count and digest (ARC-7). */
function copyEnd(item: unknown): CopyEnd | undefined {
  if ((item as { terminal?: unknown } | null)?.terminal !== true) return undefined;
  const frame = archiveTerminalFrame.safeParse(item);
  return frame.success ? { bytes: frame.data.bytes, sha256: frame.data.sha256 } : undefined;
}

export const archiveStatContract = placed({
  name: 'docker/container/archive/stat',
  kind: 'query',
  description: 'What a path in a container is (name, size, mode, mtime, link target), as docker cp asks before it copies.',
  input: z.strictObject({ containerId: containerReference, path: containerPath }),
  output: pathStat,
  errors: archiveErrors,
  access: containerAccess('archive-get'),
  placement: { kind: 'container' },
});

export const archiveGetContract = placed({
  name: 'docker/container/archive/get',
  kind: 'subscription',
  copy: { direction: 'out', end: copyEnd },
  description: [
    'A path in a container as a tar stream, as docker cp copies it out: the file or directory named, under its own base name.',
    'Output: first {stat} (what the path is), then {data} items of tar bytes, read from the engine as the caller takes them; ' +
      'the last is {terminal: true, bytes, sha256} of the whole tar stream.',
  ].join('\n\n'),
  input: z.strictObject({ containerId: containerReference, path: containerPath }),
  output: z.union([
    z.strictObject({ stat: pathStat }).describe('first: what the path is'),
    z.strictObject({ data: bytesSchema }).describe('tar bytes'),
    archiveTerminalFrame,
  ]),
  errors: archiveErrors,
  access: containerAccess('archive-get'),
  placement: { kind: 'container' },
});

export const archivePutContract = placed({
  name: 'docker/container/archive/put',
  kind: 'subscription',
  copy: { direction: 'in', end: copyEnd },
  description: [
    'Extracts a tar stream into a directory of a container, as docker cp copies in: the call\'s input stream is {data} items of tar bytes; ' +
      'ending the input ends the archive. The engine extracts it; the directory must exist.',
    'Output: the last item is {terminal: true, bytes, sha256} of the tar bytes received, once the engine has extracted them all.',
    'noOverwriteDirNonDir refuses to replace a directory with a non-directory or the reverse; copyUIDGID keeps the archive\'s owners (docker cp -a).',
  ].join('\n\n'),
  input: z.strictObject({
    containerId: containerReference,
    path: containerPath.describe('an existing directory inside the container to extract into'),
    noOverwriteDirNonDir: z.boolean().default(true),
    copyUIDGID: z.boolean().default(false),
  }),
  inputStream: z.strictObject({ data: bytesSchema }).describe('tar bytes; call.end ends the archive'),
  output: archiveTerminalFrame,
  errors: archiveErrors,
  access: containerAccess('archive-put'),
  placement: { kind: 'container' },
});
