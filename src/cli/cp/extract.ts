import { mkdir, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Unpack } from 'tar';
import { ArchiveRefused, EntryGuard, type ArchiveEntry } from './entry-guard.js';
import { escapeName } from './names.js';
import { applyDirectoryModes, createStaging, moveInto, removeStaging } from './staging.js';
import type { Placement } from './rules.js';

/**
 * An archive from a container, extracted into a staging directory beside its destination
 * with node-tar, every entry admitted by an EntryGuard first; `finish` moves it into
 * place once the stream is whole and checked, `abandon` removes it. Nothing is written
 * at the destination's name before `finish`.
 */
export class StagedExtraction {
  private readonly guard: EntryGuard;
  private readonly unpack: Unpack;
  private readonly done: Promise<void>;
  private failure: Error | undefined;

  private constructor(
    private readonly staging: string,
    /** The name the archive's entries live under (`.`: the archive holds a directory's contents). */
    private readonly top: string,
    private readonly placement: Placement,
    maxBytes: number,
  ) {
    this.guard = new EntryGuard(top, maxBytes);
    this.unpack = new Unpack({
      cwd: staging,
      // Exact modes, as docker cp's; owners never (docker's NoLchown): -a is for copies into a container.
      chmod: true,
      preserveOwner: false,
      preservePaths: false,
      unlink: false,
      strict: true,
      filter: (_path, entry) => this.guard.admit(entry as unknown as ArchiveEntry),
    });
    this.done = new Promise((resolve, reject) => {
      this.unpack.on('close', () => resolve());
      this.unpack.on('error', (error: Error) => {
        this.failure ??= error;
        reject(error);
      });
    });
    this.done.catch(() => undefined);
  }

  static async start(top: string, placement: Placement, maxBytes: number): Promise<StagedExtraction> {
    return new StagedExtraction(await createStaging(placement.dir), top, placement, maxBytes);
  }

  /** Writes a chunk of the tar stream; resolves when node-tar can take more. Throws the first refusal. */
  async write(chunk: Uint8Array): Promise<void> {
    this.check();
    if (!this.unpack.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))) {
      await new Promise<void>((resolve) => {
        const go = (): void => {
          this.unpack.off('drain', go);
          this.unpack.off('close', go);
          resolve();
        };
        this.unpack.on('drain', go);
        this.unpack.on('close', go);
      });
    }
    this.check();
  }

  /** The stream is whole and checked: node-tar finishes, then the tree is moved to its place. */
  async finish(): Promise<void> {
    this.check();
    this.unpack.end();
    await this.done;
    this.check();
    const staged = this.top === '.' ? this.staging : join(this.staging, this.top);
    // Symlinks last, as they were archived: nothing was ever written through one.
    for (const [rel, target] of this.guard.symlinks) {
      const at = rel === '' ? staged : join(staged, rel);
      await mkdir(dirname(at), { recursive: true });
      await symlink(target, at);
    }
    const target = this.placement.name === '.' ? this.placement.dir : join(this.placement.dir, this.placement.name);
    await moveInto(staged, target);
    // Contents merged into an existing directory leave its own mode alone, as docker's "." entry does.
    await applyDirectoryModes(target, this.guard.directoryModes, this.placement.name === '.');
    await removeStaging(this.staging);
  }

  async abandon(): Promise<void> {
    this.unpack.removeAllListeners('error');
    this.unpack.on('error', () => undefined);
    this.unpack.abort(new Error('abandoned'));
    await removeStaging(this.staging);
  }

  private check(): void {
    if (this.guard.refusal) throw this.guard.refusal;
    if (this.failure) throw new ArchiveRefused(`refused the archive: ${escapeName(this.failure.message)}`);
  }
}
