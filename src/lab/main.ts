import './jitless.js';
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import { connect, infoContract, RpcError, type Client, type OperationSummary, type ServerInfo } from '../client/index.js';
import type { ResultRecord } from '../outcome/index.js';
import { COPY_OPERATIONS, CopyPanel } from './copy.js';
import { exampleContainer } from './example-container.js';
import { EXEC_MANY, FanOutPanel } from './fan-out.js';
import { showHosts } from './hosts.js';
import { runCall, type LabTty } from './run.js';
import { jsonView } from './json-view.js';
import { objectOf, SchemaForm, type JsonSchema } from './schema-form.js';

/**
 * The Lab (docs/lab.md "The Lab"): discover the operations, fill an input generated from
 * each one's schema, run it over WebSocket, watch values or a terminal live, and
 * export the result record. The seed's rules: editing the request or leaving the
 * view cancels the active call, and an old result never outlives a new run or an error.
 */
const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const TOKEN_KEY = 'callwire.token';
const EXEC = 'docker/container/exec';
/** How often a fleet gateway's hosts panel asks services/info again: "last seen" and up/down move. */
const HOSTS_REFRESH_MS = 5000;
/** The demo container `npm start` makes, or on a fleet gateway the one `npm run fleet` makes on every host. */
let demo = 'callwire-demo';
const examples = (): Record<string, Record<string, unknown>> => ({
  [EXEC]: { containerId: demo, cmd: ['sh'] },
  'docker/container/logs': { containerId: demo, follow: false },
  'docker/container/inspect': { containerId: demo },
  'services/schema': { name: 'docker/container/exec' },
});

let client: Client | undefined;
let current: { name: string; kind: string; form: SchemaForm; schema: JsonSchema } | undefined;
let active: AbortController | undefined;
let lastRecord: ResultRecord | undefined;
const fanOut = new FanOutPanel($('fan-out'), () => client);
let onFleet = false;
const copy = new CopyPanel($('copy'), () => client, () => ({ container: demo, onFleet }));

const term = new Terminal({ cols: 100, rows: 20, convertEol: false, fontSize: 13 });
const fit = new FitAddon();
term.loadAddon(fit);
let termOpened = false;

async function start(): Promise<void> {
  const token = sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/callwire`;
  try {
    client = await connect(url, token ? { token } : {});
    // An anonymous caller of a server with tokens may call next to nothing: ask for one.
    const info = await client.call(infoContract, null);
    if (info.identity === null) {
      status('this server needs a token');
      $('token-form').hidden = false;
    } else status(`connected to ${location.host} as ${info.identity.subject}${token ? ' with a token' : ''}`);
    onFleet = info.fleet !== undefined;
    showFleet(info);
    const operations = await client.listOperations();
    showOperations(operations);
    if (operations.some((op) => op.name === EXEC)) await offerExample(client, info.fleet !== undefined);
  } catch (error) {
    if (error instanceof RpcError && error.code === 'FORBIDDEN') {
      status(token ? 'that token was refused' : 'this server needs a token');
      $('token-form').hidden = false;
    } else status(`cannot connect: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** A fleet gateway: its hosts, kept fresh, and the exec example on its first host (HOST/NAME). */
function showFleet(info: ServerInfo): void {
  showHosts($('hosts'), info.fleet?.hosts);
  if (!info.fleet) return;
  const first = info.fleet.hosts.find((h) => h.state === 'up') ?? info.fleet.hosts[0];
  demo = `${first?.id ?? 'HOST'}/demo`;
  $('demo-name').textContent = demo;
  const timer = setInterval(() => {
    client?.call(infoContract, null).then(
      (fresh) => showHosts($('hosts'), fresh.fleet?.hosts),
      () => clearInterval(timer),
    );
  }, HOSTS_REFRESH_MS);
}

/** The exec example names a container that runs here, or is not offered. */
async function offerExample(connected: Client, onFleet: boolean): Promise<void> {
  const found = await exampleContainer(connected, onFleet);
  if (found === undefined) {
    $('welcome-exec').hidden = true;
    return;
  }
  demo = found;
  $('demo-name').textContent = demo;
  const by = /(^|\/)(callwire-)?demo$/.test(demo) ? (onFleet ? 'npm run fleet' : 'npm start') : undefined;
  $('demo-by').textContent = by ? `, the demo one ${by} creates` : ', which runs there';
}

function status(text: string): void {
  $('connection').textContent = text;
}

function showOperations(operations: OperationSummary[]): void {
  const nav = $('operations');
  nav.replaceChildren(
    ...operations.map((op) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.dataset['op'] = op.name;
      button.textContent = op.name;
      const kind = document.createElement('span');
      kind.className = 'kind';
      kind.textContent = op.kind;
      button.append(kind);
      button.addEventListener('click', () => void select(op.name));
      return button;
    }),
  );
  $('welcome-exec').hidden = !operations.some((op) => op.name === EXEC);
}

/** Leaving an operation's view cancels its call (the seed's Lab rule). */
async function select(name: string): Promise<void> {
  cancel('left the view');
  clearResult();
  for (const b of Array.from($('operations').querySelectorAll('button'))) b.setAttribute('aria-current', String(b.dataset['op'] === name));
  // Running one command in many containers has a panel of its own: a row per target.
  // Copying files has one too: the generic form cannot send a file or save a tar.
  fanOut.show(name === EXEC_MANY);
  copy.show(COPY_OPERATIONS.includes(name));
  if (name === EXEC_MANY || COPY_OPERATIONS.includes(name)) {
    $('welcome').hidden = true;
    $('operation').hidden = true;
    document.body.dataset['views'] = String(Number(document.body.dataset['views'] ?? 0) + 1);
    return;
  }
  const spec = await client!.schema(name);
  const schema = (spec.input_schema ?? {}) as JsonSchema;
  $('welcome').hidden = true;
  $('operation').hidden = false;
  $('op-name').textContent = spec.name;
  $('op-meta').textContent = `${spec.kind}${spec.idempotent ? ' · idempotent' : ''}${spec.input_stream_schema ? ' · takes an input stream' : ''}`;
  // The first paragraph says what the operation does; the rest (formats, limits, edge cases) folds away.
  const [summary = '', ...more] = spec.description.split(/\n\s*\n/);
  $('op-description').textContent = summary;
  $('op-more-text').textContent = more.join('\n\n');
  $('op-more').hidden = more.length === 0;
  $<HTMLDetailsElement>('op-more').open = false;
  $('op-error-list').replaceChildren(
    ...spec.error_schemas.map((e) => {
      const li = document.createElement('li');
      li.textContent = `${e.code}${e.http_status ? ` (${e.http_status})` : ''}: ${e.description}`;
      return li;
    }),
  );
  const scopes = [...spec.access_control.required_scopes, ...spec.access_control.required_scopes_any.map((s) => `${s} (any)`)];
  $('op-scopes').textContent = scopes.length > 0 ? `Scopes: ${scopes.join(', ')}` : 'No scopes needed.';
  // The Lab runs exec on its own terminal: the tty size, stdin and encoding are the terminal's.
  const shown = spec.name === EXEC ? withoutProperties(schema, ['tty', 'stdin', 'encoding']) : schema;
  const form = new SchemaForm($<HTMLFormElement>('input-form'), shown, onEdit);
  current = { name: spec.name, kind: spec.kind, form, schema };
  form.render({ ...exampleOf(shown), ...examples()[spec.name] });
  ($<HTMLInputElement>('raw-toggle')).checked = false;
  showRaw(false);
  $('terminal').hidden = spec.name !== EXEC;
  if (spec.name === EXEC) openTty();
  // Each fresh view is numbered, so a script driving the page knows the form is new.
  document.body.dataset['views'] = String(Number(document.body.dataset['views'] ?? 0) + 1);
}

function withoutProperties(schema: JsonSchema, names: readonly string[]): JsonSchema {
  const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([name]) => !names.includes(name)));
  return { ...schema, properties, required: (schema.required ?? []).filter((name) => !names.includes(name)) };
}

/** A starting value: each property's default, and empty values for required ones. */
function exampleOf(schema: JsonSchema): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  const object = objectOf(schema);
  for (const [name, p] of Object.entries(object?.properties ?? {})) {
    if (p.default !== undefined) value[name] = p.default;
    else if ((object?.required ?? []).includes(name)) value[name] = p.type === 'array' ? [] : p.type === 'number' || p.type === 'integer' ? (p.minimum ?? 0) : '';
  }
  return value;
}

function openTty(): void {
  if (!termOpened) {
    term.open($('terminal'));
    termOpened = true;
  }
  fit.fit();
}

/** Editing the request cancels the active call, and its result goes (the seed's Lab rule). */
function onEdit(): void {
  if (active) {
    cancel('the request was edited');
    clearResult();
    $('input-error').textContent = 'Cancelled: the request was edited.';
  } else clearResult();
}

function cancel(why: string): void {
  active?.abort(new Error(why));
  active = undefined;
  $<HTMLButtonElement>('cancel').disabled = true;
}

function clearResult(): void {
  lastRecord = undefined;
  $('result').hidden = true;
  $('result-fields').replaceChildren();
  $('diagnostics').replaceChildren();
  $('values').textContent = '';
  $('values').hidden = true;
  $('input-error').textContent = '';
}

/** The input to send (null for an input that is only null), or undefined after showing what is wrong with it. */
function readInput(): Record<string, unknown> | null | undefined {
  if (!current) return undefined;
  if ($<HTMLInputElement>('raw-toggle').checked) {
    try {
      return JSON.parse($<HTMLTextAreaElement>('raw-input').value) as Record<string, unknown> | null;
    } catch (error) {
      $('input-error').textContent = `The raw input is not JSON: ${(error as Error).message}`;
      return undefined;
    }
  }
  const read = current.form.read();
  if ('error' in read) {
    $('input-error').textContent = `Fix the input first: ${read.error}`;
    return undefined;
  }
  return read.value;
}

function showRaw(raw: boolean): void {
  $('input-form').hidden = raw;
  $('raw-input').hidden = !raw;
}

async function run(): Promise<void> {
  if (!current || !client) return;
  cancel('a new run started');
  clearResult();
  const input = readInput();
  if (input === undefined) return;
  const controller = new AbortController();
  active = controller;
  $<HTMLButtonElement>('cancel').disabled = false;
  const isExec = current.name === EXEC;
  if (isExec) {
    openTty();
    term.reset();
    term.focus();
  } else if (current.kind === 'subscription') $('values').hidden = false;
  const tty: LabTty = {
    cols: term.cols,
    rows: term.rows,
    write: (text) => term.write(text),
    onData: (listener) => {
      const d = term.onData(listener);
      return () => d.dispose();
    },
    onResize: (listener) => {
      const d = term.onResize(({ cols, rows }) => listener(cols, rows));
      return () => d.dispose();
    },
  };
  const result = await runCall(client, current.name, current.kind, input, controller.signal, {
    value: (v) => ($('values').textContent += `${JSON.stringify(v)}\n`),
    tty,
  });
  // A call cancelled by an edit or a new run shows nothing: its successor owns the screen.
  if (active !== controller) return;
  active = undefined;
  $<HTMLButtonElement>('cancel').disabled = true;
  showResult(result);
}

function showResult(record: ResultRecord): void {
  lastRecord = record;
  const rows: [string, string | HTMLElement][] = [
    ['outcome', record.outcome],
    ['exit code', String(record.exit_code)],
    ['call id', record.call_id ?? '—'],
    ['events', String(record.events_seen)],
  ];
  if (record.exec) rows.push(['bytes', `stdout ${record.exec.stdout_bytes}, stderr ${record.exec.stderr_bytes}`]);
  if (record.output !== undefined) rows.push(['output', jsonView(record.output)]);
  $('result-fields').replaceChildren(
    ...rows.flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.append(v);
      if (k === 'outcome') dd.className = v === 'success' ? 'outcome-success' : 'outcome-failure';
      dd.dataset['field'] = k;
      return [dt, dd];
    }),
  );
  $('diagnostics').replaceChildren(
    ...record.diagnostics.map((d) => {
      const li = document.createElement('li');
      li.textContent = `${d.code}: ${d.message}`;
      return li;
    }),
  );
  $('result').hidden = false;
  // The result sits under the form (and the terminal): bring it into view, top first when it is taller than the window.
  $('result').scrollIntoView({ block: 'nearest' });
}

function exportRecord(): void {
  if (!lastRecord) return;
  const blob = new Blob([`${JSON.stringify(lastRecord)}\n`], { type: 'application/json' });
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = `callwire-result-${lastRecord.call_id ?? 'refused'}.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

$('run').addEventListener('click', () => void run());
$('try-exec').addEventListener('click', () => void select(EXEC));
$('cancel').addEventListener('click', () => cancel('cancelled by the user'));
$('export').addEventListener('click', exportRecord);
$('raw-input').addEventListener('input', onEdit);
$('raw-toggle').addEventListener('change', () => {
  const raw = $<HTMLInputElement>('raw-toggle').checked;
  if (raw && current) {
    const read = current.form.read();
    $<HTMLTextAreaElement>('raw-input').value = JSON.stringify('value' in read ? read.value : {}, null, 2);
  } else if (!raw && current) {
    try {
      current.form.fill(JSON.parse($<HTMLTextAreaElement>('raw-input').value) as Record<string, unknown> | null);
    } catch {
      // keep the fields as they were; the raw text was not JSON
    }
  }
  showRaw(raw);
});
$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  // The tab's session only: never a URL, never localStorage.
  sessionStorage.setItem(TOKEN_KEY, $<HTMLInputElement>('token').value.trim());
  location.reload();
});
window.addEventListener('resize', () => termOpened && !$('terminal').hidden && fit.fit());
window.addEventListener('pagehide', () => cancel('left the page'));
void start();
