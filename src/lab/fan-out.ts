import { RpcError, type Client } from '../client/index.js';

export const EXEC_MANY = 'docker/container/exec-many';

/** Output lines a row shows: the last ones, as a glance at `tail`. */
const SHOWN_LINES = 3;
/** What a row keeps of a target's output to find those lines: a chatty target costs the page no more. */
const KEPT_CHARS = 4096;

/** The items of `docker/container/exec-many` the panel reads (its contract, src/contracts/docker-exec-many.ts, has them all). */
type Item =
  | { readonly targets: readonly string[]; readonly owners?: Readonly<Record<string, string | null>>; readonly othersLeftOut?: number }
  | { readonly target: string; readonly frame: { readonly stream: string; readonly text?: string } }
  | { readonly target: string; readonly result: { readonly exitCode?: number; readonly error?: { readonly code: string; readonly message: string } } }
  | { readonly summary: { readonly exitCode: number; readonly text: string } };

interface Row {
  readonly owner: HTMLTableCellElement;
  readonly state: HTMLTableCellElement;
  readonly exit: HTMLTableCellElement;
  readonly output: HTMLTableCellElement;
  tail: string;
}

/**
 * The Lab's fan-out panel (docs/lab.md): a selection by labels or patterns and a
 * command, run through `docker/container/exec-many` on the Lab's connection; one row
 * per target with its owner, live state, exit code and last output lines, then the
 * summary, saying how many containers of other owners the selection left out
 * (docs/security.md "Fan-out": "Any owner" takes them).
 * Editing the selection or command, or leaving the panel, cancels the run, as
 * everywhere in the Lab.
 */
export class FanOutPanel {
  private active: AbortController | undefined;
  private readonly rows = new Map<string, Row>();
  /** What the summary adds: the containers of other owners the selection left out. */
  private leftOut = '';

  constructor(
    private readonly root: HTMLElement,
    private readonly client: () => Client | undefined,
  ) {
    this.field('run').addEventListener('click', () => void this.run());
    this.field('cancel').addEventListener('click', () => this.cancel('cancelled by the user'));
    for (const id of ['labels', 'targets', 'command', 'any-owner']) this.field(id).addEventListener('input', () => this.cancel('the request was edited'));
  }

  show(visible: boolean): void {
    if (!visible) this.cancel('left the view');
    this.root.hidden = !visible;
  }

  cancel(why: string): void {
    this.active?.abort(new Error(why));
    this.active = undefined;
    (this.field('cancel') as HTMLButtonElement).disabled = true;
  }

  private field(id: string): HTMLElement {
    return this.root.querySelector(`#fan-out-${id}`) as HTMLElement;
  }

  private async run(): Promise<void> {
    const client = this.client();
    if (!client) return;
    this.cancel('a new run started');
    const list = (id: string): string[] =>
      (this.field(id) as HTMLInputElement).value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    const labels = list('labels');
    const targets = list('targets');
    const command = (this.field('command') as HTMLInputElement).value.trim();
    const anyOwner = (this.field('any-owner') as HTMLInputElement).checked;
    this.rows.clear();
    this.leftOut = '';
    this.field('rows').replaceChildren();
    if (labels.length + targets.length === 0 || command === '') return this.say('Name a label or a target pattern, and a command.', true);
    const controller = new AbortController();
    this.active = controller;
    (this.field('cancel') as HTMLButtonElement).disabled = false;
    this.say('running…', false);
    const input = { ...(labels.length ? { labels } : {}), ...(targets.length ? { targets } : {}), ...(anyOwner ? { anyOwner } : {}), cmd: ['sh', '-c', command] };
    try {
      for await (const item of client.iterate<Item>(EXEC_MANY, input, { signal: controller.signal })) {
        if (this.active !== controller) return;
        this.take(item);
      }
    } catch (error) {
      // A run cancelled by an edit or a new run shows nothing: its successor owns the panel.
      if (this.active !== controller) return;
      const rpc = RpcError.from(error);
      this.say(`${rpc.code}: ${rpc.message}`, true);
    }
    if (this.active === controller) {
      this.active = undefined;
      (this.field('cancel') as HTMLButtonElement).disabled = true;
    }
  }

  private take(item: Item): void {
    if ('targets' in item) {
      for (const target of item.targets) {
        const owner = item.owners?.[target];
        this.row(target).owner.textContent = owner === undefined ? '?' : owner === null ? '-' : owner;
      }
      const others = item.othersLeftOut ?? 0;
      if (others > 0) this.leftOut = ` · ${others} container${others === 1 ? '' : 's'} of other owners left out (Any owner takes them)`;
      if (item.targets.length === 0) this.say(`No running container matches.${this.leftOut}`, true);
    } else if ('frame' in item) {
      const row = this.row(item.target);
      row.state.textContent = 'running';
      row.state.className = 'state-running';
      if (item.frame.text !== undefined) {
        row.tail = (row.tail + item.frame.text).slice(-KEPT_CHARS);
        row.output.textContent = row.tail.replace(/\n$/, '').split('\n').slice(-SHOWN_LINES).join('\n');
      }
    } else if ('result' in item) {
      const row = this.row(item.target);
      const { exitCode, error } = item.result;
      row.state.textContent = exitCode === undefined ? `not run: ${error?.code ?? ''}` : 'exited';
      row.state.title = error?.message ?? '';
      row.exit.textContent = exitCode === undefined ? '123' : String(exitCode);
      row.state.className = row.exit.className = exitCode === 0 ? 'outcome-success' : 'outcome-failure';
    } else this.say(`${item.summary.text}${this.leftOut}`, item.summary.exitCode !== 0, item.summary.exitCode);
  }

  /** The target's row, made the first time it is named (in the order of the selection). */
  private row(target: string): Row {
    const known = this.rows.get(target);
    if (known) return known;
    const tr = document.createElement('tr');
    tr.dataset['target'] = target;
    const cell = (field: string, text: string): HTMLTableCellElement => {
      const td = document.createElement('td');
      td.dataset['field'] = field;
      td.textContent = text;
      tr.append(td);
      return td;
    };
    cell('target', target);
    const row: Row = { owner: cell('owner', ''), state: cell('state', 'pending'), exit: cell('exit', ''), output: cell('output', ''), tail: '' };
    this.field('rows').append(tr);
    this.rows.set(target, row);
    return row;
  }

  private say(text: string, bad: boolean, exitCode?: number): void {
    const summary = this.field('summary');
    summary.textContent = exitCode === undefined ? text : `exit ${exitCode} · ${text}`;
    summary.className = bad ? 'outcome-failure' : '';
  }
}
