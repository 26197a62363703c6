import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fencedBlocks } from '../support/markdown.js';
import { freePorts } from '../support/ports.js';
import { isRunning } from '../support/proc.js';
import { DEFAULT_URL } from '../../src/cli/defaults.js';
import { cliPath } from '../support/cli.js';
import { until } from '../support/wait.js';

const ROOT = resolve(import.meta.dirname, '../..');
/** The doc this test follows; CALLWIRE_TEST_FLEET_DOC points it at a copy (a mutation check edits the copy, never the doc). */
const FLEET_DOC = process.env['CALLWIRE_TEST_FLEET_DOC'] ?? join(ROOT, 'docs/fleet.md');

/** The section "By hand": from its heading to the next heading, list indentation dropped so its fenced blocks read as blocks. */
function byHandSection(markdown: string): string {
  const start = markdown.indexOf('\n### By hand\n');
  if (start < 0) throw new Error(`${FLEET_DOC} has no section "### By hand"`);
  const rest = markdown.slice(start + 1);
  const end = rest.slice(rest.indexOf('\n')).search(/^#{1,3} /m);
  return (end < 0 ? rest : rest.slice(0, rest.indexOf('\n') + end))
    .split('\n')
    .map((line) => line.trimStart())
    .join('\n');
}

/** The section's inline code spans (outside its fenced blocks), each on one line as Markdown renders a span that wraps. */
function inlineCode(section: string): string[] {
  const prose = section.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  return [...prose.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\s*\n\s*/g, ' '));
}

/** The one code span (or block) that `pattern` matches: the doc's command for a step. */
function theOne(codes: string[], pattern: RegExp): string {
  const found = codes.filter((code) => pattern.test(code));
  if (found.length !== 1) throw new Error(`docs/fleet.md "By hand": expected one command matching ${pattern}, found ${found.length}: ${found.join(' | ')}`);
  return found[0]!;
}

/** The commands of "By hand", as the doc writes them. */
function byHandCommands(): { cluster: string; clusterEnv: string; container: string; agent: string; gateway: string; exec: string } {
  const section = byHandSection(readFileSync(FLEET_DOC, 'utf8'));
  const codes = inlineCode(section);
  const blocks = fencedBlocks(section).filter((block) => block.lang === 'sh').map((block) => block.body);
  return {
    cluster: theOne(codes, /nats-cluster\.sh up/),
    clusterEnv: theOne(codes, /nats-cluster\.sh env/),
    container: theOne(codes, /^docker run /),
    agent: theOne(blocks, /callwire(\.js)? +(\\\n\s*)?agent /),
    gateway: theOne(blocks, /callwire(\.js)? +(\\\n\s*)?serve /),
    exec: theOne(codes, /callwire exec /),
  };
}

/** A terminal of its own: `bash -c SCRIPT` in a process group of its own, in the clone, its output kept. */
class Terminal {
  readonly child: ChildProcess;
  /** stdout and stderr as they came, as a terminal shows them. */
  output = '';
  stdout = '';
  readonly exited: Promise<number | null>;

  constructor(script: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('bash', ['-c', script], { cwd: ROOT, detached: true, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (chunk: Buffer) => {
      this.output += chunk.toString();
      this.stdout += chunk.toString();
    });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((done) => this.child.on('exit', (code) => done(code)));
  }

  /** Waits until its output matches, failing with what it said when it exits first or takes longer than `timeoutMs`. */
  async waitFor(pattern: RegExp, what: string, timeoutMs = 60_000): Promise<void> {
    await until(() => pattern.test(this.output) || this.child.exitCode !== null, what, timeoutMs).catch((error: Error) => {
      throw new Error(`${error.message}; the terminal said: ${this.output.slice(-2000)}`);
    });
    if (!pattern.test(this.output)) throw new Error(`the terminal exited ${this.child.exitCode} before ${what}; it said: ${this.output.slice(-2000)}`);
  }

  /** Every process of its group, as /proc has them now: what bash started, with what they left behind (the nodes of `up`). */
  processes(): number[] {
    return readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number)
      .filter((pid) => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
          // After the command name, which is in parentheses and may hold spaces: state, ppid, pgrp.
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === this.child.pid && isRunning(pid);
        } catch {
          return false;
        }
      });
  }

  /** Ctrl-C as a terminal sends it: SIGINT to the whole group; SIGKILL for what is left after 20 s. */
  async stop(): Promise<void> {
    const signal = (name: NodeJS.Signals): void => {
      try {
        process.kill(-this.child.pid!, name);
      } catch {
        // the group is gone
      }
    };
    const members = this.processes();
    // An empty group's number may be another's by now.
    if (members.length === 0) return void (await this.exited);
    signal('SIGINT');
    await until(() => !members.some(isRunning), 'the terminal\'s processes to stop', 20_000).catch(() => signal('SIGKILL'));
    await this.exited;
  }
}

/** The pids of the cluster's nodes, from the state directory `env` names. */
function natsNodes(env: NodeJS.ProcessEnv): number[] {
  const root = env['CALLWIRE_NATS_ROOT']!;
  return [1, 2, 3].map((n) => {
    try {
      return Number(readFileSync(join(root, `node${n}`, 'nats.pid'), 'utf8').trim());
    } catch {
      return 0;
    }
  }).filter((pid) => pid > 0);
}

function listening(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.once('connect', () => done(socket.destroy() !== undefined));
    socket.once('error', () => done(false));
  });
}

/**
 * docs/fleet.md "By hand" as a newcomer follows it (issue 33): its commands read from the doc
 * itself and run as written, through bash, each in a terminal (process group) of its own,
 * with the real CLI as `npx callwire` (and `dist/bin/callwire.js` under `node`) in this clone. The machine's own settings stay outside
 * the commands, in each terminal's environment: the cluster's state directory and ports
 * (scripts/nats-cluster.sh's header lists them; the shared cluster holds the defaults), the
 * shared engine's DOCKER_HOST (never a second engine: step 2's `docker-engine.sh up` is the
 * one command not run), and none of the shared cluster's CALLWIRE_NATS_* variables, so each
 * terminal has only what the doc tells it to get. Two substitutions, both of a name: the
 * container is one of this test's own rather than `demo` (the shared engine's, which other
 * tests use), and `serve` gets `--port 0 --wt-port 0` appended (the doc invites "every flag
 * of serve"; its port may be anyone's), its WebSocket URL given to `exec` in place of the
 * doc's, which must name the doc's gateway port.
 */
describe('docs/fleet.md "By hand"', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'callwire-by-hand-'));
  const container = `byhand-${randomUUID().slice(0, 8)}`;
  const terminals: Terminal[] = [];
  const ports: number[] = [];
  const dockerEnv = { ...process.env };
  afterAll(async () => {
    for (const terminal of terminals.reverse()) await terminal.stop();
    execFileSync('bash', ['scripts/nats-cluster.sh', 'down'], { cwd: ROOT, env: { ...process.env, CALLWIRE_NATS_ROOT: join(scratch, 'nats') }, stdio: 'ignore' });
    execFileSync('docker', ['rm', '-f', container], { env: dockerEnv, stdio: 'ignore' });
    rmSync(scratch, { recursive: true, force: true });
  });

  it('starts the cluster, an agent and a gateway as written; exec a/CONTAINER -- uname -a prints the container\'s; all of it stops', async () => {
    const doc = byHandCommands();
    const natsPorts = await freePorts('127.0.0.1', 9);
    ports.push(...natsPorts);
    const machine: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CALLWIRE_NATS_') && name !== 'CALLWIRE_URL'));
    Object.assign(machine, {
      CALLWIRE_NATS_ROOT: join(scratch, 'nats'),
      CALLWIRE_NATS_CLIENT_PORTS: natsPorts.slice(0, 3).join(' '),
      CALLWIRE_NATS_CLUSTER_PORTS: natsPorts.slice(3, 6).join(' '),
      CALLWIRE_NATS_HTTP_PORTS: natsPorts.slice(6, 9).join(' '),
    });
    const terminal = (script: string, env: NodeJS.ProcessEnv = machine): Terminal => {
      const opened = new Terminal(script, env);
      terminals.push(opened);
      return opened;
    };

    // 1. NATS: the variables it prints are the cluster's, on the ports this machine set.
    const first = terminal(`${doc.cluster}\necho "URLS=$CALLWIRE_NATS_URLS"`);
    expect(await first.exited, first.output).toBe(0);
    expect(first.output).toContain(`URLS=${natsPorts.slice(0, 3).map((port) => `nats://127.0.0.1:${port}`).join(',')}`);

    // 2. An engine (the shared one, at DOCKER_HOST) and a container to try, named as this test's own.
    const run = doc.container.replace(/--name demo\b/, `--name ${container}`);
    expect(run, 'the doc\'s container is named demo').not.toBe(doc.container);
    const created = terminal(run);
    expect(await created.exited, created.output).toBe(0);

    // 3. An agent without an engine starts, says so, and warns until one answers (and stops on Ctrl-C).
    const inNewTerminal = (command: string): string => `${doc.clusterEnv}\n${command}`;
    const engineless = terminal(inNewTerminal(doc.agent), { ...machine, DOCKER_HOST: `unix://${join(scratch, 'no-engine.sock')}` });
    await engineless.waitFor(/callwire agent is serving[\s\S]*docker\s+not answering/, 'the agent\'s banner saying the engine does not answer');
    await engineless.waitFor(/(cannot list the engine's containers[\s\S]*){2}/, 'the agent warning again that the engine does not answer');
    await engineless.stop();
    expect(engineless.processes()).toEqual([]);

    //    The agent beside the engine.
    const agent = terminal(inNewTerminal(doc.agent));
    await agent.waitFor(/callwire agent is serving[\s\S]*docker\s+on/, 'the agent serving with its engine on');
    expect(agent.output).toMatch(/host\s+a\b/);

    // 4. A gateway, on a port of its own.
    const gateway = terminal(inNewTerminal(`${doc.gateway} --port 0 --wt-port 0`));
    await gateway.waitFor(/WebSocket\s+ws:\/\/\S+[\s\S]*\n\s+operations /, 'the gateway\'s banner');
    const url = /WebSocket\s+(ws:\/\/\S+)/.exec(gateway.output)![1]!;
    expect(gateway.output).toMatch(/fleet\s+gateway \w+ over NATS/);
    // Run as the doc says, the agent and the gateway have the Node flags their banners ask for.
    expect(gateway.output).not.toMatch(/^\s+node\s+without/m);
    expect(agent.output).not.toMatch(/^\s+node\s+without/m);
    // The doc's gateway is not on npm start's port, and its exec and Lab name the gateway's.
    const docPort = /--port (\d+)/.exec(doc.gateway)?.[1];
    expect(docPort, 'the doc\'s gateway names its port').toBeDefined();
    expect(docPort).not.toBe(new URL(DEFAULT_URL).port);
    expect(doc.exec).toContain(`--url ws://127.0.0.1:${docPort}/callwire`);
    ports.push(Number(new URL(url).port));

    // Then the exec, as a newcomer types it: a second or two later, which on a loaded machine the
    // agent's table may need to reach the gateway (it waits FIRST_TABLES_MS for them, src/fleet/gateway.ts).
    await until(() => hostUp(url), 'host a up in the gateway\'s services/info', 20_000);
    const exec = doc.exec.replace(/\ba\/demo\b/, `a/${container}`).replace(/--url \S+/, `--url ${url}`);
    expect(exec, 'the doc\'s exec names a/demo').not.toContain('a/demo');
    const execed = terminal(exec, machine);
    expect(await execed.exited, execed.output).toBe(0);
    const engineSays = execFileSync('docker', ['exec', container, 'uname', '-a'], { env: dockerEnv, encoding: 'utf8' });
    expect(execed.stdout).toBe(engineSays);

    // Ctrl-C in each terminal, then the cluster down: nothing it started runs or listens.
    const started = [...terminals.flatMap((t) => t.processes()), ...natsNodes(machine)];
    expect(started.length).toBeGreaterThanOrEqual(3 + 2); // the nodes, the agent and the gateway (each under npx)
    for (const t of [gateway, agent]) await t.stop();
    execFileSync('bash', ['scripts/nats-cluster.sh', 'down'], { cwd: ROOT, env: machine, stdio: 'ignore' });
    await until(() => !started.some(isRunning), 'every process started to end', 20_000).catch(() => undefined);
    expect(started.filter(isRunning)).toEqual([]);
    for (const port of ports) expect(await listening(port), `port ${port}`).toBe(false);
  }, 300_000);
});

/** Whether the gateway at `url` lists host a as up (services/info, `fleet.hosts`). */
function hostUp(url: string): boolean {
  try {
    const info = JSON.parse(execFileSync(process.execPath, [cliPath, '--url', url, 'call', 'services/info'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })) as { fleet?: { hosts?: { id: string; state: string }[] } };
    return info.fleet?.hosts?.some((h) => h.id === 'a' && h.state === 'up') ?? false;
  } catch {
    return false;
  }
}
