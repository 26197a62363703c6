import { archiveGetContract, archivePutContract, isRegularMode, RpcError, type ArchiveTerminalFrame, type Client } from '../client/index.js';
import { runningContainers } from './example-container.js';
import { ustarHeader, ustarTrailer } from './ustar.js';

/** The operations whose nav entries open the copy panel: the generic form cannot send a file. */
export const COPY_OPERATIONS: readonly string[] = [archiveGetContract.name, archivePutContract.name];

/**
 * The most a copy moves either way (docs/security.md "The Lab's copies"): a download is
 * held in the tab as a Blob, and Web Crypto's one-shot digest reads the whole tar once
 * more, so for a moment it is in memory twice. Larger copies are `callwire cp`'s.
 */
export const LAB_COPY_MAX_BYTES = 1024 ** 3;
/** What a download gathers before folding it into its Blob, which the browser may keep out of the page's heap. */
const FOLD_BYTES = 8 * 1024 * 1024;

/** A copy the panel refuses, in words it shows. */
class CopyRefused extends Error {}

const tooLarge = (what: string): CopyRefused =>
  new CopyRefused(`${what} is larger than the Lab's bound of ${LAB_COPY_MAX_BYTES} bytes (1 GiB): copy it with callwire cp instead`);

/** Where the Lab runs: the container it names by default, and whether names are HOST/NAME. */
export interface CopyDefaults {
  readonly container: string;
  readonly onFleet: boolean;
}

/**
 * The Lab's copy panel (docs/lab.md): download a path of a container as a tar file,
 * or upload one file into a directory of it, with progress; each copy's terminal frame
 * (its byte count and SHA-256) is checked in the page. Editing a field, a new copy or
 * leaving the panel cancels the running one, as everywhere in the Lab.
 */
export class CopyPanel {
  private active: AbortController | undefined;
  private file: File | undefined;
  private savedUrl: string | undefined;

  constructor(
    private readonly root: HTMLElement,
    private readonly client: () => Client | undefined,
    private readonly defaults: () => CopyDefaults,
  ) {
    this.field('download').addEventListener('click', () => void this.download());
    this.field('upload').addEventListener('click', () => void this.upload());
    this.field('cancel').addEventListener('click', () => this.cancel('cancelled by the user'));
    for (const id of ['container', 'path', 'dir']) this.field(id).addEventListener('input', () => this.cancel('the request was edited'));
    const picker = this.field('file') as HTMLInputElement;
    picker.addEventListener('change', () => this.choose(picker.files?.[0]));
    const drop = this.field('drop');
    drop.addEventListener('dragover', (event) => {
      event.preventDefault();
      drop.classList.add('drop-over');
    });
    drop.addEventListener('dragleave', () => drop.classList.remove('drop-over'));
    drop.addEventListener('drop', (event) => {
      event.preventDefault();
      drop.classList.remove('drop-over');
      // The picker no longer names the file to send: the dropped one is.
      picker.value = '';
      this.choose(event.dataTransfer?.files[0]);
    });
  }

  show(visible: boolean): void {
    if (!visible) this.cancel('left the view');
    this.root.hidden = !visible;
    if (!visible) return;
    const { container, onFleet } = this.defaults();
    const input = this.field('container') as HTMLInputElement;
    if (input.value === '') input.value = container;
    const client = this.client();
    if (client) void runningContainers(client, onFleet).then((names) => this.field('containers').replaceChildren(...names.map((name) => Object.assign(document.createElement('option'), { value: name }))));
  }

  cancel(why: string): void {
    this.active?.abort(new Error(why));
    this.active = undefined;
    (this.field('cancel') as HTMLButtonElement).disabled = true;
  }

  private field(id: string): HTMLElement {
    return this.root.querySelector(`#copy-${id}`) as HTMLElement;
  }

  private value(id: string): string {
    return (this.field(id) as HTMLInputElement).value.trim();
  }

  private choose(file: File | undefined): void {
    this.cancel('another file was chosen');
    this.file = file;
    // A name's control characters shown escaped, as the refusal quotes them.
    this.field('chosen').textContent = file ? `${file.name.replace(/\p{Cc}/gu, (c) => JSON.stringify(c).slice(1, -1))} (${file.size} bytes)` : 'no file chosen';
  }

  private say(text: string, error: boolean): void {
    const status = this.field('status');
    status.textContent = text;
    status.className = error ? 'error' : '';
  }

  /** Progress so far; `total` undefined shows the count alone. */
  private progress(done: number, total: number | undefined, what: string): void {
    const bar = this.field('progress') as HTMLProgressElement;
    bar.hidden = false;
    if (total === undefined) bar.removeAttribute('value');
    else {
      bar.max = Math.max(total, 1);
      bar.value = Math.min(done, total);
    }
    this.say(total === undefined ? `${what}: ${done} bytes so far` : `${what}: ${Math.min(done, total)} of ${total} bytes`, false);
  }

  /** A new copy: the previous one cancelled, its saved file's URL released; undefined when nothing is connected. */
  private begin(): { client: Client; controller: AbortController } | undefined {
    const client = this.client();
    if (!client) return undefined;
    this.cancel('a new copy started');
    this.forgetSaved();
    (this.field('progress') as HTMLProgressElement).hidden = true;
    const controller = new AbortController();
    this.active = controller;
    (this.field('cancel') as HTMLButtonElement).disabled = false;
    return { client, controller };
  }

  /** Whether `controller`'s copy still owns the panel; when it does, it ends here. */
  private end(controller: AbortController): boolean {
    if (this.active !== controller) return false;
    this.active = undefined;
    (this.field('cancel') as HTMLButtonElement).disabled = true;
    return true;
  }

  private fail(controller: AbortController, error: unknown): void {
    if (!this.end(controller)) {
      const reason = controller.signal.reason as unknown;
      // Editing, a new copy or leaving cancels quietly: its successor owns the panel.
      if (reason instanceof Error && reason.message === 'cancelled by the user') this.say('Cancelled.', true);
      return;
    }
    if (error instanceof RpcError) this.say(`${error.code}: ${error.message}`, true);
    else this.say(error instanceof Error ? error.message : String(error), true);
  }

  /** A copy done: the bar full, whether or not its size was known before. */
  private done(bytes: number): void {
    const bar = this.field('progress') as HTMLProgressElement;
    bar.max = Math.max(bytes, 1);
    bar.value = bar.max;
  }

  private forgetSaved(): void {
    if (this.savedUrl) URL.revokeObjectURL(this.savedUrl);
    this.savedUrl = undefined;
    this.field('save').hidden = true;
  }

  private async download(): Promise<void> {
    const begun = this.begin();
    if (!begun) return;
    const { client, controller } = begun;
    const containerId = this.value('container');
    const path = this.value('path');
    let tar = new Blob([]);
    let pending: BlobPart[] = [];
    let pendingBytes = 0;
    let bytes = 0;
    let fileSize: number | undefined;
    let name = 'archive';
    let terminal: ArchiveTerminalFrame | undefined;
    try {
      this.say(`Downloading ${containerId}:${path}…`, false);
      for await (const item of client.iterate(archiveGetContract, { containerId, path }, { signal: controller.signal })) {
        if ('stat' in item) {
          name = savedName(item.stat.name);
          // A regular file's size is known before a byte moves; a directory's is not.
          if (isRegularMode(item.stat.mode)) fileSize = item.stat.size;
          if (fileSize !== undefined && fileSize > LAB_COPY_MAX_BYTES) throw tooLarge(`${containerId}:${path}`);
        } else if ('data' in item) {
          bytes += item.data.byteLength;
          if (bytes > LAB_COPY_MAX_BYTES) throw tooLarge(`${containerId}:${path}`);
          // Decoded frames never share memory: the bytes are an ArrayBuffer's.
          pending.push(item.data as Uint8Array<ArrayBuffer>);
          pendingBytes += item.data.byteLength;
          if (pendingBytes >= FOLD_BYTES) {
            tar = new Blob([tar, ...pending]);
            pending = [];
            pendingBytes = 0;
          }
          this.progress(bytes, fileSize, 'Downloading (tar bytes)');
        } else terminal = item;
      }
      tar = new Blob([tar, ...pending], { type: 'application/x-tar' });
      pending = [];
      const checked = await checkTerminal(tar, bytes, terminal);
      if (!this.end(controller)) return;
      this.done(bytes);
      this.savedUrl = URL.createObjectURL(tar);
      const save = this.field('save') as HTMLAnchorElement;
      save.href = this.savedUrl;
      save.download = `${name}.tar`;
      save.textContent = `Save ${name}.tar`;
      save.hidden = false;
      this.say(`Downloaded ${containerId}:${path}: ${bytes} tar bytes${fileSize === undefined ? '' : ` (a file of ${fileSize} bytes)`}; ${checked}.`, false);
    } catch (error) {
      this.fail(controller, error);
    }
  }

  private async upload(): Promise<void> {
    const begun = this.begin();
    if (!begun) return;
    const { client, controller } = begun;
    const containerId = this.value('container');
    const dir = this.value('dir');
    const file = this.file;
    try {
      if (!file) throw new CopyRefused('Choose a file, or drop one on the drop zone, first.');
      if (file.size > LAB_COPY_MAX_BYTES) throw tooLarge(file.name);
      const tar = new Blob([ustarHeader({ name: file.name, size: file.size, mtime: file.lastModified / 1000 }), file, ustarTrailer(file.size)]);
      let sent = 0;
      const progress = (): void => this.progress(sent, tar.size, `Uploading ${file.name}`);
      // Read from the file only as the server grants credit for it.
      const items = async function* (): AsyncGenerator<{ data: Uint8Array }> {
        const reader = tar.stream().getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) return;
            sent += value.byteLength;
            progress();
            yield { data: value };
          }
        } finally {
          void reader.cancel().catch(() => undefined);
        }
      };
      let terminal: ArchiveTerminalFrame | undefined;
      const input = { containerId, path: dir, noOverwriteDirNonDir: true, copyUIDGID: false };
      for await (const item of client.iterate(archivePutContract, input, { signal: controller.signal, input: items() })) terminal = item;
      const checked = await checkTerminal(tar, sent, terminal);
      if (!this.end(controller)) return;
      this.say(`Uploaded ${file.name} (${file.size} bytes) to ${containerId}:${dir.replace(/\/+$/, '')}/${file.name}; ${checked}.`, false);
    } catch (error) {
      this.fail(controller, error);
    }
  }
}

/** The base name a download is saved under: the path stat's name, with nothing a file name cannot hold. */
function savedName(statName: string): string {
  const name = statName.replace(/[/\\\p{Cc}]/gu, '_').replace(/^\.+$/, '');
  return name === '' ? 'root' : name;
}

/**
 * Checks the terminal frame against the tar bytes this page holds or sent; throws when they
 * differ. Web Crypto exists only in a secure context (https, or localhost): elsewhere the
 * byte count alone is checked, and the page says so.
 */
async function checkTerminal(tar: Blob, counted: number, terminal: ArchiveTerminalFrame | undefined): Promise<string> {
  if (terminal === undefined) throw new CopyRefused('the copy ended without its terminal frame: it is incomplete');
  if (terminal.bytes !== counted || tar.size !== counted) throw new CopyRefused(`the copy does not match its terminal frame: ${counted} bytes here, ${terminal.bytes} there`);
  if (!globalThis.crypto?.subtle) return `its byte count checked; its sha256 not checked: this page is not a secure context (https or localhost), which Web Crypto needs`;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', await tar.arrayBuffer()));
  const sha256 = Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  if (sha256 !== terminal.sha256) throw new CopyRefused(`the copy does not match its terminal frame: sha256 ${sha256} here, ${terminal.sha256} there`);
  return `sha256 ${sha256} checked against the server's`;
}
