import type { Client } from '../client/index.js';

interface Row {
  readonly names?: readonly string[];
  readonly host?: string;
}

/**
 * The container the Lab's examples open: the demo one where it runs (`npm start`'s
 * `callwire-demo`; on a fleet, `npm run fleet`'s `demo` on an up host), else the first
 * running container; undefined when nothing runs or the caller may not list. A fleet
 * made by hand has no `demo`: an example naming one would fail on its first Run.
 */
export async function exampleContainer(client: Client, onFleet: boolean): Promise<string | undefined> {
  let rows: readonly Row[];
  try {
    const answer = (await client.call('docker/container/list', { all: false })) as { containers?: readonly Row[] };
    rows = answer.containers ?? [];
  } catch {
    return undefined;
  }
  const named = (row: Row): string | undefined => {
    const name = row.names?.[0]?.replace(/^\//, '');
    if (name === undefined) return undefined;
    return onFleet && row.host !== undefined ? `${row.host}/${name}` : name;
  };
  const demo = rows.find((row) => row.names?.includes(onFleet ? '/demo' : '/callwire-demo'));
  return named(demo ?? rows[0] ?? {});
}
