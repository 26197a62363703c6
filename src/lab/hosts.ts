import type { ServerInfo } from '../client/index.js';

export type FleetHost = NonNullable<ServerInfo['fleet']>['hosts'][number];

/** "3 s ago", "2 min ago": how long since a host's agent last beat. */
export function lastSeen(ms: number): string {
  if (ms < 1000) return 'now';
  if (ms < 60_000) return `${Math.floor(ms / 1000)} s ago`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ago`;
  return `${Math.floor(ms / 3_600_000)} h ago`;
}

/**
 * The hosts panel of a fleet gateway's Lab (docs/fleet.md "Addressing"): one row per host
 * of `services/info`'s `fleet.hosts`, as the gateway last heard its agent. A server
 * that is not a gateway has no `fleet`, and the panel stays hidden.
 */
export function showHosts(panel: HTMLElement, hosts: readonly FleetHost[] | undefined): void {
  panel.hidden = hosts === undefined;
  const body = panel.querySelector('tbody');
  if (!body || hosts === undefined) return;
  body.replaceChildren(
    ...hosts.map((host) => {
      const row = document.createElement('tr');
      row.dataset['host'] = host.id;
      const cells: [string, string][] = [
        ['id', host.id],
        // A host whose agent beats but whose engine does not answer cannot run a call either.
        ['state', host.state === 'up' && host.engine === 'down' ? 'up, engine down' : host.state],
        ['containers', String(host.containers)],
        ['seen', lastSeen(host.lastSeenMs)],
      ];
      for (const [field, text] of cells) {
        const td = document.createElement('td');
        td.dataset['field'] = field;
        td.textContent = text;
        if (field === 'state') td.className = host.state === 'up' && host.engine === 'up' ? 'host-up' : 'host-down';
        row.append(td);
      }
      return row;
    }),
  );
  const empty = panel.querySelector<HTMLElement>('.hosts-empty');
  if (empty) empty.hidden = hosts.length > 0;
}
