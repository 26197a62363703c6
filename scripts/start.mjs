// npm start: the server with the main job working on a fresh machine (README, first screen).
// Finds a Docker engine, or starts the project's private one when it can (root); makes sure
// a labelled demo container `callwire-demo` runs; then runs `callwire serve` until Ctrl-C,
// and stops the engine only if it started it. It removes nothing: the demo container and
// anything else in the engine stay for next time.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import Docker from 'dockerode';
import { longLivedNodeFlags } from '../dist/cli/node-flags.js';
import { DEMO, demoContainer } from './demo-container.mjs';

// The project's own engine: scripts/docker-engine.sh's root, which CALLWIRE_DOCKER_ROOT moves.
const PRIVATE_SOCKET = `${process.env.CALLWIRE_DOCKER_ROOT ?? '/tmp/callwire-docker'}/docker.sock`;
const say = (line) => process.stderr.write(`[npm start] ${line}\n`);

async function answers(socketPath) {
  if (!existsSync(socketPath)) return false;
  try {
    await new Docker({ socketPath, timeout: 3000 }).ping();
    return true;
  } catch {
    return false;
  }
}

/** The engine to use: DOCKER_HOST, the system's, ours already running, or ours started now. */
async function findEngine() {
  if (process.env.DOCKER_HOST) return { host: process.env.DOCKER_HOST, started: false, why: `DOCKER_HOST=${process.env.DOCKER_HOST}` };
  if (await answers('/var/run/docker.sock')) return { host: 'unix:///var/run/docker.sock', started: false, why: 'the system engine at /var/run/docker.sock' };
  if (await answers(PRIVATE_SOCKET)) return { host: `unix://${PRIVATE_SOCKET}`, started: false, why: `the project's engine, already running at ${PRIVATE_SOCKET}` };
  if (process.getuid?.() !== 0) {
    say('docker: off. No engine answers (DOCKER_HOST, /var/run/docker.sock), and starting one needs root: run  npm start  as root (sudo npm start, where sudo is installed), or set DOCKER_HOST to an engine that answers');
    return undefined;
  }
  say(`docker: no engine answers; starting the project's own at ${PRIVATE_SOCKET} (scripts/docker-engine.sh up; Ctrl-C stops it)`);
  try {
    execFileSync('bash', ['scripts/docker-engine.sh', 'up'], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    say(`docker: could not start the engine: ${String(error.stderr ?? error).trim().split('\n').slice(-3).join(' | ')}`);
    return undefined;
  }
  return { host: `unix://${PRIVATE_SOCKET}`, started: true, why: 'the project\'s engine, started now' };
}

const engine = process.env.CALLWIRE_NO_DOCKER ? undefined : await findEngine();
const env = { ...process.env };
if (engine) {
  env.DOCKER_HOST = engine.host;
  try {
    const demo = await demoContainer(new Docker({ socketPath: engine.host.replace(/^unix:\/\//, ''), timeout: 30_000 }));
    say(demo ? `docker: ${engine.why}; demo container ${demo}: try  npx callwire exec -it ${DEMO} sh` : `docker: ${engine.why}; no local image for a demo container (docker pull busybox, then npm start again)`);
  } catch (error) {
    say(`docker: ${engine.why}; the demo container failed: ${error.message}`);
  }
}

const server = spawn(process.execPath, [...longLivedNodeFlags, 'dist/bin/callwire.js', 'serve', ...process.argv.slice(2)], { stdio: 'inherit', env });
// Ctrl-C reaches the server too (same process group); a signal to npm reaches this process
// (package.json execs it, so no shell stands between) and goes on to the server. Either way
// we wait for the server to finish, then stop what we started.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => server.kill(signal));
const code = await new Promise((resolve) => server.on('exit', (c, s) => resolve(c ?? (s ? 128 + 2 : 1))));
const stopped = ['the server (and its HTTP/3 edge)'];
const left = [];
if (engine?.started) {
  try {
    execFileSync('bash', ['scripts/docker-engine.sh', 'stop'], { stdio: 'ignore' });
    stopped.push('the Docker engine it started (its containers and images stay)');
  } catch {
    left.push('the Docker engine it started: scripts/docker-engine.sh stop stops it');
  }
} else if (engine) {
  left.push(`the Docker engine (${engine.why}) and the demo container ${DEMO}, which npm start did not start`);
}
say(`stopped: ${stopped.join('; ')}${left.length > 0 ? `. Left running: ${left.join('; ')}` : '. Nothing left running'}`);
process.exit(code);
