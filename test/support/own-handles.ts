import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** One TCP socket of this process, from /proc/net/tcp{,6}: its ports and whether it listens. */
export interface OwnTcpSocket {
  readonly localPort: number;
  readonly remotePort: number;
  readonly listening: boolean;
}

/** What this process's descriptors point at: a file's path, or `socket:[inode]`. */
function descriptorTargets(): string[] {
  const targets: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      targets.push(readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // Closed between the listing and the read (the listing's own descriptor among them).
    }
  }
  return targets;
}

/** Descriptors this process holds open on `path`. */
export function openFileHandles(path: string): number {
  return descriptorTargets().filter((target) => target === path).length;
}

/** The TCP sockets this process holds (not the machine's: other processes' are left out by inode). */
export function ownTcpSockets(): OwnTcpSocket[] {
  const inodes = new Set(descriptorTargets().flatMap((target) => /^socket:\[(\d+)\]$/.exec(target)?.[1] ?? []));
  const sockets: OwnTcpSocket[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || !inodes.has(fields[9]!)) continue;
      sockets.push({ localPort: portOf(fields[1]!), remotePort: portOf(fields[2]!), listening: fields[3] === '0A' });
    }
  }
  return sockets;
}

const portOf = (address: string): number => parseInt(address.split(':')[1]!, 16);

/** The ports this process listens on over TCP. */
export const ownListeningPorts = (): number[] => ownTcpSockets().filter((s) => s.listening).map((s) => s.localPort).sort((a, b) => a - b);
