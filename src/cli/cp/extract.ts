import { lstat, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Parser, type ReadEntry } from 'tar';
import { EntryGuard } from './entry-guard.js';
import { LinkJournal } from './link-check.js';
import { escapeName } from './names.js';
import { ArchiveRefused } from './refusals.js';
import { StagedTree } from './staged-tree.js';
import { applyDirectoryModes, createStaging, moveInto, removeStaging } from './staging.js';
import { CopyError, type Placement } from './rules.js';

/**
 * An archive from a container, extracted into a staging directory beside its destination,
 * every entry admitted by an EntryGuard and made by a StagedTree, one after another;
 * `finish` checks the links and moves the tree into place once the stream is whole and
 * checked, `abandon` removes it. Nothing is written at the destination's name before
 * `finish`.
 *
 * node-tar parses (no parser of our own); the entries are made here, in the archive's
 * order, each before the next is taken: node-tar hands over the next entry only once
 * the last has ended, and takes no more bytes while one is queued, so at most one data
 * item of entries waits, whatever the archive holds (a copy's memory does not grow with
 * its entries).
 */
export class StagedExtraction {
  private readonly guard: EntryGuard;
  private readonly tree: StagedTree;
  private readonly parser: Parser;
  /** The entry being made, and those queued behind it (at most one: see above). */
  private work: Promise<void> = Promise.resolve();
  private current: ReadEntry | undefined;
  private failure: Error | undefined;
  private readonly ended: Promise<void>;
  /** Wakes a write waiting for node-tar to take more, when it fails instead. */
  private wake: (() => void) | undefined;

  private constructor(
    private readonly staging: string,
    /** The name the archive's entries live under (`.`: the archive holds a directory's contents). */
    private readonly top: string,
    private readonly placement: Placement,
    private readonly links: LinkJournal,
    maxBytes: number,
  ) {
    this.guard = new EntryGuard(top, maxBytes);
    this.tree = new StagedTree(join(staging, 'tree'), top);
    this.parser = new Parser({ strict: true });
    this.parser.on('entry', (entry: ReadEntry) => {
      this.work = this.work.then(() => this.make(entry));
    });
    // An entry node-tar does not hand over: a type it does not know (sparse, a volume label) or a header it cannot use.
    this.parser.on('ignoredEntry', (entry: ReadEntry) => this.fail(new ArchiveRefused(`refused the archive at entry "${escapeName(entry.path)}": its type, ${entry.type}: a copy holds files, directories and links only`)));
    this.ended = new Promise((resolve) => {
      this.parser.on('end', () => resolve());
      this.parser.on('error', (error: Error) => {
        this.fail(new ArchiveRefused(`refused the archive: ${escapeName(error.message)}`));
        resolve();
      });
    });
  }

  static async start(top: string, placement: Placement, maxBytes: number): Promise<StagedExtraction> {
    const staging = await createStaging(placement.dir);
    try {
      await mkdir(join(staging, 'tree'), 0o700);
      return new StagedExtraction(staging, top, placement, await LinkJournal.create(join(staging, 'links')), maxBytes);
    } catch (error) {
      await removeStaging(staging);
      throw error;
    }
  }

  /** Writes a chunk of the tar stream; resolves when node-tar can take more. Throws the first refusal. */
  async write(chunk: Uint8Array): Promise<void> {
    this.check();
    if (!this.parser.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength))) {
      await new Promise<void>((resolve) => {
        const go = (): void => {
          this.parser.off('drain', go);
          this.wake = undefined;
          resolve();
        };
        this.wake = go;
        this.parser.on('drain', go);
      });
    }
    this.check();
  }

  /** The stream is whole and checked: the last entries are made, the links checked, then the tree is moved to its place. */
  async finish(): Promise<void> {
    this.check();
    this.parser.end();
    await this.ended;
    await this.work;
    this.check();
    await this.links.check((rel) => this.tree.pathOf(rel));
    const staged = this.tree.pathOf('');
    if (!(await lstat(staged).catch(() => undefined))) throw new ArchiveRefused(`refused the archive: it holds nothing named "${escapeName(this.top)}", the path copied`);
    const target = this.placement.name === '.' ? this.placement.dir : join(this.placement.dir, this.placement.name);
    // Contents merged into an existing directory leave its own mode alone, as docker's "." entry does.
    const keepRoot = this.placement.name === '.';
    await moveInto(staged, target, keepRoot);
    await applyDirectoryModes(target, this.tree.deferredModes, keepRoot);
    await removeStaging(this.staging);
  }

  async abandon(): Promise<void> {
    this.fail(new ArchiveRefused('abandoned'));
    // An entry waiting for bytes that will never come ends here; then nothing writes while the staging directory goes.
    this.current?.destroy();
    await this.work;
    await this.links.close();
    await removeStaging(this.staging);
  }

  /** Makes one entry, then lets node-tar go on to the next; after a failure, entries are only drained. */
  private async make(entry: ReadEntry): Promise<void> {
    this.current = entry;
    try {
      if (this.failure) return;
      const admitted = this.guard.admit(entry);
      await this.tree.make(admitted, entry.path, entry as AsyncIterable<Buffer>, entry.mtime);
      if (admitted.kind === 'symlink') await this.links.add(admitted.rel);
    } catch (error) {
      // A refusal as it is; anything else is the disk's (a full one, a name too long for it): said with the entry it stopped at.
      this.fail(error instanceof ArchiveRefused ? error : new CopyError(`the copy stopped at entry "${escapeName(entry.path)}": ${escapeName((error as Error).message)}`));
    } finally {
      this.current = undefined;
      entry.resume();
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.wake?.();
  }

  private check(): void {
    if (this.failure) throw this.failure;
  }
}
