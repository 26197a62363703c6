import type { Readable } from 'node:stream';
import type Docker from 'dockerode';

/**
 * Run by `sh` inside the container as root: SIGKILLs the given container pids,
 * then, round after round, every process whose environment carries the mark
 * ($1, `CALLWIRE_EXEC=<token>`), until a round finds none (exit 0) or the rounds
 * run out (exit 3); without `tr` or `grep` it could not see the mark (exit 127).
 * The sweep's own processes do not carry the mark: it comes as an argument, not in
 * their environment.
 */
const SWEEP = `command -v tr >/dev/null && command -v grep >/dev/null || exit 127
m=$1; shift
[ $# -gt 0 ] && kill -9 "$@" 2>/dev/null
n=0
while :; do
  found=
  for d in /proc/[0-9]*; do
    if tr '\\0' '\\n' <"$d/environ" 2>/dev/null | grep -qxF "$m"; then kill -9 "\${d#/proc/}" 2>/dev/null && found=1; fi
  done
  [ -z "$found" ] && exit 0
  n=$((n+1)); [ "$n" -lt 40 ] || exit 3
  sleep 0.05
done`;

const SWEEP_TIMEOUT_MS = 10_000;

/**
 * Kills an exec's processes from inside its container, through the engine: the
 * route for a server that may not signal or read the processes on its host (not
 * root, a remote engine, another pid namespace). Needs `sh`, `tr`, `grep`, `kill`
 * and `sleep` in the container. Resolves the reason it could not, or undefined.
 */
export async function sweepInside(container: Docker.Container, mark: string, insidePids: readonly number[]): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const sweep = await container.exec({ Cmd: ['sh', '-c', SWEEP, 'sh', mark, ...insidePids.map(String)], User: '0', AttachStdout: true, AttachStderr: true });
    const output = (await sweep.start({ Detach: false })) as Readable;
    // Nothing to read but the end; bounded, so an engine that never ends the stream does not hold the kill.
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => {
        output.destroy();
        reject(new Error(`the sweep did not end within ${SWEEP_TIMEOUT_MS} ms`));
      }, SWEEP_TIMEOUT_MS);
      output.on('end', resolve).on('close', resolve).on('error', reject).resume();
    });
    for (let attempt = 0; attempt < 40; attempt++) {
      const state = await sweep.inspect();
      if (!state.Running && state.ExitCode !== null) return state.ExitCode === 0 ? undefined : `the sweep inside the container exited ${state.ExitCode}`;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return "the engine did not report the sweep's exit code";
  } catch (error) {
    // The container stopped: its processes went with it.
    if ((error as { statusCode?: number }).statusCode === 409) return undefined;
    return `the sweep inside the container failed: ${String(error)}`;
  } finally {
    clearTimeout(timer);
  }
}
