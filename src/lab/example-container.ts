import type { Client } from '../client/index.js';

interface Row {
  readonly names?: readonly string[];
  readonly host?: string;
}

/** The running containers, each as a call names it (HOST/NAME on a fleet); undefined when the caller may not list. */
async function runningRows(client: Client, onFleet: boolean): Promise<{ row: Row; name: string }[] | undefined> {
  let rows: readonly Row[];
  try {
    const answer = (await client.call('docker/container/list', { all: false })) as { containers?: readonly Row[] };
    rows = answer.containers ?? [];
  } catch {
    return undefined;
  }
  return rows.flatMap((row) => {
    const name = row.names?.[0]?.replace(/^\//, '');
    if (name === undefined) return [];
    return [{ row, name: onFleet && row.host !== undefined ? `${row.host}/${name}` : name }];
  });
}

/** The running containers' names, as a call names them: the Lab's copy panel offers them. */
export async function runningContainers(client: Client, onFleet: boolean): Promise<string[]> {
  return ((await runningRows(client, onFleet)) ?? []).map(({ name }) => name);
}

/**
 * The container the Lab's examples open: the demo one where it runs (`npm start`'s
 * `callwire-demo`; on a fleet, `npm run fleet`'s `demo` on an up host), else the first
 * running container; undefined when nothing runs or the caller may not list. A fleet
 * made by hand has no `demo`: an example naming one would fail on its first Run.
 */
export async function exampleContainer(client: Client, onFleet: boolean): Promise<string | undefined> {
  const running = (await runningRows(client, onFleet)) ?? [];
  const demo = running.find(({ row }) => row.names?.includes(onFleet ? '/demo' : '/callwire-demo'));
  return (demo ?? running[0])?.name;
}
