import type Docker from 'dockerode';
import type { DockerEngine } from './engine.js';
import { containerProcesses, descendants, innermostPid, signalAll } from './kill-tree.js';
import { sweepInside } from './sweep-inside.js';

/** The exec being killed: its container (full id) and the mark its processes carry (`CALLWIRE_EXEC=<token>`). */
export interface ExecTarget {
  readonly container: Docker.Container;
  readonly containerId: string;
  readonly exec: Docker.Exec;
  readonly mark: string;
}

const ROUNDS = 40;
const ROUND_MS = 50;

/**
 * Kills an exec's processes (spec §12, EXEC-5); resolves the reason it could not,
 * or undefined. Its processes are the exec's process tree and every process of the
 * container whose environment carries the exec's mark, however it re-parented
 * (setsid, nohup, a double fork); SIGKILLed round after round until none is left,
 * so a child forked during a round goes in the next. As root with the engine's
 * processes visible here, the server does it from this host's /proc; otherwise
 * (not root, a remote engine, another pid namespace) the engine runs a sweep
 * inside the container as root, which finds the marked processes there.
 */
export async function killExec(engine: DockerEngine, target: ExecTarget): Promise<string | undefined> {
  for (let round = 0; round < ROUNDS; round++) {
    const state = await target.exec.inspect().catch(() => undefined);
    // Not started yet (no exit code), or running without a pid: nothing carries the mark
    // yet, and the process must not start unkilled after a sweep that found nothing.
    const starting = state !== undefined && (state.Running ? state.Pid === 0 : state.ExitCode === null);
    if (!starting) {
      const step = engine.local ? killFromHost(target, state?.Running === true ? state.Pid : undefined) : { inside: [] };
      if (step === 'done') return undefined;
      if (step !== 'again') return sweepInside(target.container, target.mark, step.inside);
    }
    await new Promise((resolve) => setTimeout(resolve, ROUND_MS));
  }
  return `processes of the exec were still running ${(ROUNDS * ROUND_MS) / 1000} s after the kill`;
}

/**
 * One round of the kill from this host's /proc: SIGKILLs the tree of `running` (the
 * exec's own pid while it runs) and every marked process of the container. Done
 * when there is nothing left to kill; `inside` (with the container pids of what it
 * could not signal) when the server may not read or signal the processes, or sees
 * none of the container's (the engine's pids are not this host's).
 */
function killFromHost(target: ExecTarget, running: number | undefined): 'done' | 'again' | { inside: number[] } {
  const processes = containerProcesses(target.containerId, target.mark);
  if (processes.length === 0) return { inside: [] };
  const tree = running === undefined ? [] : descendants(processes, running);
  const pids = [...new Set([...tree, ...processes.filter((p) => p.marked === true).map((p) => p.pid)])];
  const { denied } = signalAll(pids);
  if (denied.length > 0 || processes.some((p) => p.marked === undefined)) return { inside: insidePids(denied) };
  return pids.length === 0 && running === undefined ? 'done' : 'again';
}

/**
 * Sends one signal to an exec's own process (EXEC-9), as `kill` would to the pid
 * `docker exec` started; resolves the reason it could not, or undefined. Directly
 * as root, or through the engine (`kill` inside the container as root).
 */
export async function signalExec(engine: DockerEngine, container: Docker.Container, exec: Docker.Exec, signal: NodeJS.Signals): Promise<string | undefined> {
  if (!engine.local) return `the engine at ${engine.address} is remote: its process ids are not this host's`;
  // A running exec whose pid the engine has not recorded yet is asked again, briefly.
  for (let attempt = 0; attempt < 20; attempt++) {
    const state = await exec.inspect();
    if (!state.Running) return undefined; // ended already: nothing to signal
    if (state.Pid > 0) return deliver(container, state.Pid, signal);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return 'the engine did not report the process id';
}

const insidePids = (hostPids: readonly number[]): number[] => hostPids.map(innermostPid).filter((pid): pid is number => pid !== undefined);

async function deliver(container: Docker.Container, pid: number, signal: NodeJS.Signals): Promise<string | undefined> {
  const { denied, missing } = signalAll([pid], signal);
  if (missing.includes(pid)) return `pid ${pid} is not visible here (another pid namespace?)`;
  if (denied.length === 0) return undefined;
  const inside = insidePids(denied);
  if (inside.length === 0) return "not permitted, and the process's container pid is unreadable";
  try {
    const killer = await container.exec({ Cmd: ['kill', `-${signal.slice(3)}`, ...inside.map(String)], User: '0', AttachStdout: false, AttachStderr: false });
    await killer.start({ Detach: true });
    return undefined;
  } catch (error) {
    return `kill inside the container failed: ${String(error)}`;
  }
}
