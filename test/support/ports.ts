import { createServer } from 'node:net';

/**
 * Ports a test picks now and a process of its own binds later (a NATS node, a server started
 * with `--port N`). The kernel's pick for port 0 would come from the ephemeral range, where
 * every outgoing connection of every test also takes its local port, and two files starting
 * clusters side by side could be handed the same one. These come from below that range
 * (Linux's default starts at 32768), from a slice of their own per vitest worker
 * (VITEST_POOL_ID, unique among the workers running at once): files running side by side
 * never pick the same port, and a port a test picked stays its own while a node it killed
 * is down, so the node can bind it again. A port something else listens on is passed over.
 */
const FIRST = 10_000;
const SLICE = 2_000;
const SLICES = 11; // 10,000 ... 31,999

/** The ports of this process's slice: its vitest worker's (1, 2, ...), or slice 0 outside vitest (a bench run by hand). */
export function workerPorts(): { first: number; last: number } {
  const pool = Number(process.env['VITEST_POOL_ID'] ?? 0);
  const slice = Number.isInteger(pool) && pool > 0 ? 1 + ((pool - 1) % (SLICES - 1)) : 0;
  return { first: FIRST + slice * SLICE, last: FIRST + slice * SLICE + SLICE - 1 };
}

// A process spawned by a test (the bench's own cluster) shares its worker's slice: it starts
// elsewhere in the slice, by its pid, so the two do not walk the same ports.
let next = process.pid % SLICE;

function listenable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A TCP port on `host` that nothing listens on now and that no other worker of this run picks. */
export async function freePort(host: string): Promise<number> {
  const { first, last } = workerPorts();
  for (let tried = 0; tried < SLICE; tried++) {
    const port = first + next;
    next = (next + 1) % SLICE;
    if (await listenable(host, port)) return port;
  }
  throw new Error(`no free TCP port on ${host} in ${first}-${last}`);
}

/** `count` distinct free ports (see freePort). */
export async function freePorts(host: string, count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) ports.push(await freePort(host));
  return ports;
}
