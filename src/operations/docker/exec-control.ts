import type Docker from 'dockerode';
import type { DockerEngine } from './engine.js';
import { innermostPid, processTree, signalAll } from './kill-tree.js';

/**
 * Kills an exec's processes (spec §12, EXEC-5); resolves the reason it could not,
 * or undefined. Docker cannot kill an exec by id, but its inspect gives the host
 * pid: as root we SIGKILL the host process tree; as an unprivileged user in the
 * engine socket's group (EPERM), the engine runs `kill` inside the container as
 * root, with the pids the processes have there (NSpid). A remote engine's pids are
 * not ours, nor are those of an engine in another pid namespace: there, closing
 * the stream is all we can do, and services/schema says so.
 */
export async function killExec(engine: DockerEngine, container: Docker.Container, exec: Docker.Exec): Promise<string | undefined> {
  if (!engine.local) return remote(engine);
  let reason = 'the process was still running 2 s after the kill';
  for (let attempt = 0; attempt < 40; attempt++) {
    const state = await exec.inspect().catch(() => undefined);
    // Not running and no exit code: the engine is still starting it, and it must not start unkilled.
    if (!state || (!state.Running && state.ExitCode !== null)) return undefined;
    if (state.Pid > 0) reason = (await deliver(container, processTree(state.Pid), 'SIGKILL', state.Pid)) ?? reason;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return reason;
}

/**
 * Sends one signal to an exec's own process (EXEC-9), as `kill` would to the pid
 * `docker exec` started; resolves the reason it could not, or undefined. The same
 * route as the kill: directly, or through the engine inside the container.
 */
export async function signalExec(engine: DockerEngine, container: Docker.Container, exec: Docker.Exec, signal: NodeJS.Signals): Promise<string | undefined> {
  if (!engine.local) return remote(engine);
  // A running exec whose pid the engine has not recorded yet is asked again, briefly.
  for (let attempt = 0; attempt < 20; attempt++) {
    const state = await exec.inspect();
    if (!state.Running) return undefined; // ended already: nothing to signal
    if (state.Pid > 0) return deliver(container, [state.Pid], signal, state.Pid);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return 'the engine did not report the process id';
}

const remote = (engine: DockerEngine): string => `the engine at ${engine.address} is remote: its process ids are not this host's`;

async function deliver(container: Docker.Container, pids: readonly number[], signal: NodeJS.Signals, root: number): Promise<string | undefined> {
  const { denied, missing } = signalAll(pids, signal);
  if (missing.includes(root)) return `pid ${root} is not visible here (another pid namespace?)`;
  if (denied.length === 0) return undefined;
  const inside = denied.map(innermostPid).filter((pid): pid is number => pid !== undefined);
  if (inside.length === 0) return "not permitted, and the processes' container pids are unreadable";
  try {
    const killer = await container.exec({ Cmd: ['kill', `-${signal.slice(3)}`, ...inside.map(String)], User: '0', AttachStdout: false, AttachStderr: false });
    await killer.start({ Detach: true });
    return undefined;
  } catch (error) {
    return `kill inside the container failed: ${String(error)}`;
  }
}
