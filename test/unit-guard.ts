import net from 'node:net';
import { afterEach } from 'vitest';

/**
 * The `unit` project's setup file (test/projects.ts): a unit test has no Docker engine and no
 * NATS. It sees no engine's address and no NATS credentials, and any test that still connects
 * to a Docker socket or a NATS port fails, saying which file to move, so a file in the wrong
 * project shows at once instead of passing locally and failing in a fresh clone.
 */
const natsPorts = new Set(
  (process.env['CALLWIRE_NATS_URLS'] ?? '')
    .split(',')
    .filter((url) => url !== '')
    .map((url) => Number(new URL(url).port)),
);
for (const name of Object.keys(process.env)) if (name.startsWith('CALLWIRE_NATS_')) delete process.env[name];
process.env['DOCKER_HOST'] = 'unix:///nonexistent/unit-tests-have-no-docker.sock';

const reached: string[] = [];

function forbidden(args: unknown[]): string | undefined {
  // net.createConnection passes [options, callback] as one array; socket.connect(options | path | port, host?).
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  const options = typeof first === 'object' && first !== null ? (first as { path?: unknown; port?: unknown }) : typeof first === 'string' ? { path: first } : { port: first };
  if (typeof options.path === 'string' && /docker/i.test(options.path)) return `the Docker socket ${options.path}`;
  const port = Number(options.port);
  if (natsPorts.has(port)) return `NATS on port ${port}`;
  if (port === 2375 || port === 2376) return `a Docker engine on port ${port}`;
  return undefined;
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  const what = forbidden(args);
  if (what !== undefined) reached.push(what);
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof connect;

afterEach(({ task }) => {
  if (reached.length === 0) return;
  const what = [...new Set(reached.splice(0))].join(', ');
  throw new Error(`a unit test reached ${what}: ${task.file.filepath} belongs in the integration project (test/projects.ts)`);
});
