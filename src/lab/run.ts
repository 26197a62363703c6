import { exec, type Client } from '../client/index.js';
import { classify, resultRecord, errorFields, execResultRecord, type ResultRecord } from '../outcome/index.js';

/** What the Lab shows a call's progress on. */
export interface RunView {
  /** A streamed value (not exec). */
  value(value: unknown): void;
  /** The exec's tty (the Lab's xterm.js), when the call is an exec. */
  readonly tty: LabTty;
}

export interface LabTty {
  readonly cols: number;
  readonly rows: number;
  write(text: string): void;
  /** Keystrokes; returns the unsubscribe. */
  onData(listener: (data: string) => void): () => void;
  onResize(listener: (cols: number, rows: number) => void): () => void;
}

const EXEC = 'docker/container/exec';

/**
 * Runs one call as the CLI's `--json` would and returns the same result record
 * (spec/cli/result-record.schema.json): what "Export result JSON" saves. An
 * exec runs interactively on the Lab's terminal: keys and resizes go to it.
 */
export async function runCall(client: Client, name: string, kind: string, input: Record<string, unknown> | null, signal: AbortSignal, view: RunView): Promise<ResultRecord> {
  const callId = crypto.randomUUID();
  const base = { operation: name, call_id: callId } as const;
  let events = 0;
  if (name === EXEC) {
    const t = view.tty;
    const handle = exec(client, String(input?.['containerId']), (input?.['cmd'] as string[] | undefined) ?? [], {
      id: callId,
      signal,
      stdin: 'pipe',
      tty: { cols: t.cols, rows: t.rows },
      ...(Array.isArray(input?.['env']) ? { env: input['env'] as string[] } : {}),
      ...(typeof input?.['workingDir'] === 'string' ? { workingDir: input['workingDir'] } : {}),
      ...(typeof input?.['user'] === 'string' ? { user: input['user'] } : {}),
    });
    const offData = t.onData((data) => void handle.stdin.write(data).catch(() => undefined));
    const offResize = t.onResize((cols, rows) => handle.resize(cols, rows));
    const subscription = handle.output.subscribe({
      next: (frame) => {
        events++;
        if ('text' in frame) t.write(frame.text);
      },
      // handle.result rejects with the same error, and that is where it is reported; unhandled here, RxJS would throw it.
      error: () => undefined,
    });
    try {
      const result = await handle.result;
      return execResultRecord({ ...base, events_seen: events + 1, end: result });
    } catch (error) {
      return execResultRecord({ ...base, events_seen: events, end: undefined, failure: { classified: classify(error), error } });
    } finally {
      offData();
      offResize();
      subscription.unsubscribe();
    }
  }
  try {
    if (kind !== 'subscription') {
      const output = await client.call(name, input, { id: callId, signal });
      return resultRecord({ command: 'call', ...base, outcome: 'success', failure_boundary: 'none', events_seen: 1, output });
    }
    for await (const value of client.iterate(name, input, { id: callId, signal })) {
      events++;
      view.value(value);
    }
    return resultRecord({ command: 'call', ...base, outcome: 'success', failure_boundary: 'none', events_seen: events });
  } catch (error) {
    return failed('call', base, events, error, {});
  }
}

function failed(command: 'call' | 'exec', base: { operation: string; call_id: string }, events: number, error: unknown, extra: Partial<ResultRecord>): ResultRecord {
  const classified = classify(error);
  return resultRecord({ command, ...base, ...extra, outcome: classified.outcome, failure_boundary: classified.boundary, events_seen: events, ...errorFields(error, classified.outcome) });
}
