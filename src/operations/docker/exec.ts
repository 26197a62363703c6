import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { z } from 'zod';
import { execContract } from '../../contracts/index.js';
import { defineOperation, type CallContext, type Operation } from '../../dispatcher/index.js';
import { RpcError } from '../../protocol/index.js';
import { DockerDemuxer, mergeAdjacent } from './demux.js';
import type { DockerEngine } from './engine.js';
import { containerError, engineError } from './errors.js';
import { innermostPid, killAll, processTree } from './kill-tree.js';
import { inspectOwned } from './ownership.js';

type ExecInput = z.output<typeof execContract.input>;
type ExecFrame = z.input<typeof execContract.output>;

/** `docker/container/exec` (spec/PROTOCOL.md §12): the contract, implemented against an engine. */
export function execOperation(engine: DockerEngine, labelPrefix: string): Operation {
  return defineOperation({ ...execContract, handler: (input, ctx) => runExec(engine, labelPrefix, input, ctx) });
}

async function* runExec(engine: DockerEngine, labelPrefix: string, input: ExecInput, ctx: CallContext): AsyncGenerator<ExecFrame> {
  const container = engine.docker.getContainer(input.containerId);
  const info = await inspectOwned(engine, input.containerId, ctx.identity, labelPrefix);
  if (!info.State.Running) {
    throw new RpcError('DOCKER_ERROR', `container ${input.containerId} is not running`, { details: { statusCode: 409 } });
  }
  const exec = await container
    .exec({
      Cmd: input.cmd,
      AttachStdout: true,
      AttachStderr: true,
      AttachStdin: input.stdin !== undefined,
      Tty: false,
      ...(input.env ? { Env: input.env } : {}),
      ...(input.workingDir ? { WorkingDir: input.workingDir } : {}),
      ...(input.user ? { User: input.user } : {}),
    })
    .catch((error: unknown) => {
      throw containerError(error, input.containerId);
    });
  if (ctx.signal.aborted) return;
  const socket = (await exec.start({ hijack: true, stdin: input.stdin !== undefined }).catch((error: unknown) => {
    throw engineError(error);
  })) as Duplex;

  let finished = false;
  let killed = false;
  const kill = (): void => {
    if (killed) return;
    killed = true;
    socket.destroy();
    void killExec(engine, container, exec).then((failure) => {
      if (failure === undefined) return;
      engine.counters.execKillFailures++;
      ctx.logger.warn('could not kill an exec process', { reason: failure });
    });
  };
  // An abort that came while the engine was starting the exec must still kill it:
  // a listener added now would never fire, and a silent command would live on.
  if (ctx.signal.aborted) kill();
  else ctx.signal.addEventListener('abort', kill, { once: true });
  try {
    // The command's stdin: given bytes, or the call's input stream as it arrives; then
    // end of file (a half-close of the engine's stream).
    if (input.stdin === 'stream') void feedStdin(socket, ctx.input as AsyncIterable<{ data: Uint8Array }>);
    else if (input.stdin !== undefined) socket.end(input.stdin);
    const demux = new DockerDemuxer();
    const counts = { stdout: 0, stderr: 0 };
    // Per-stream decoders keep state, so a character split across chunks survives.
    const decoders = { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') };
    // Pulling chunk by chunk: while the caller is slow, this loop waits, the socket
    // stops reading, and the engine's writes block (spec §8).
    for await (const chunk of socket as AsyncIterable<Buffer>) {
      for (const frame of mergeAdjacent(demux.push(chunk))) {
        counts[frame.stream] += frame.data.byteLength;
        if (input.encoding === 'binary') {
          yield { stream: frame.stream, data: frame.data };
        } else {
          const text = decoders[frame.stream].decode(frame.data, { stream: true });
          if (text.length > 0) yield { stream: frame.stream, text };
        }
      }
    }
    if (ctx.signal.aborted) return;
    if (!demux.clean) throw new RpcError('DOCKER_ERROR', 'the engine ended the output in the middle of a frame', { details: {} });
    if (input.encoding === 'utf8') {
      for (const stream of ['stdout', 'stderr'] as const) {
        const rest = decoders[stream].decode();
        if (rest.length > 0) yield { stream, text: rest };
      }
    }
    // EXEC-2: both streams are drained; only now ask the engine for the exit code.
    const exitCode = await exitCodeOf(exec, ctx.signal);
    finished = true;
    yield { exitCode, terminal: true, stdoutBytes: counts.stdout, stderrBytes: counts.stderr };
  } finally {
    ctx.signal.removeEventListener('abort', kill);
    // Left early (abort, error, iterator return): the process must not outlive the call.
    if (!finished) kill();
    else socket.destroy();
  }
}

/**
 * Writes the call's input stream to the command's stdin, waiting for the engine to
 * take each piece (a slow command slows the caller, through the call's credit), then
 * half-closes it. An abort destroys the socket, which ends this too.
 */
async function feedStdin(socket: Duplex, items: AsyncIterable<{ data: Uint8Array }>): Promise<void> {
  try {
    for await (const { data } of items) {
      if (socket.destroyed) return;
      if (!socket.write(data)) await new Promise((resolve) => socket.once('drain', resolve).once('close', resolve));
    }
    if (!socket.destroyed) socket.end();
  } catch {
    // The socket or the call is gone; the output loop reports what happened.
  }
}

async function exitCodeOf(exec: Docker.Exec, signal: AbortSignal): Promise<number> {
  // The stream can end a moment before the engine records the exit.
  for (let attempt = 0; attempt < 400 && !signal.aborted; attempt++) {
    const state = await exec.inspect().catch((error: unknown) => {
      throw engineError(error);
    });
    if (!state.Running && state.ExitCode !== null && state.ExitCode !== undefined) return state.ExitCode;
    await new Promise((resolve) => setTimeout(resolve, attempt < 20 ? 5 : 25));
  }
  throw new RpcError('DOCKER_ERROR', 'the engine did not report an exit code', { details: {} });
}

/**
 * Kills an exec's processes (spec §12, EXEC-5); resolves the reason it could not,
 * or undefined. Docker cannot kill an exec by id, but its inspect gives the host
 * pid: as root we SIGKILL the host process tree; as an unprivileged user in the
 * engine socket's group (EPERM), the engine runs `kill` inside the container as
 * root, with the pids the processes have there (NSpid). A remote engine's pids are
 * not ours, nor are those of an engine in another pid namespace: there, closing
 * the stream is all we can do, and services/schema says so.
 */
async function killExec(engine: DockerEngine, container: Docker.Container, exec: Docker.Exec): Promise<string | undefined> {
  if (!engine.local) return `the engine at ${engine.address} is remote: its process ids are not this host's`;
  let reason = 'the process was still running 2 s after the kill';
  for (let attempt = 0; attempt < 40; attempt++) {
    const state = await exec.inspect().catch(() => undefined);
    if (!state || !state.Running) return undefined;
    if (state.Pid > 0) {
      const tree = processTree(state.Pid);
      const { denied, missing } = killAll(tree);
      if (missing.includes(state.Pid)) reason = `pid ${state.Pid} is not visible here (another pid namespace?)`;
      if (denied.length > 0) {
        const inside = denied.map(innermostPid).filter((pid): pid is number => pid !== undefined);
        reason = await killInside(container, inside).catch((error: unknown) => `kill inside the container failed: ${String(error)}`) ?? reason;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return reason;
}

async function killInside(container: Docker.Container, pids: readonly number[]): Promise<string | undefined> {
  if (pids.length === 0) return 'not permitted, and the processes\' container pids are unreadable';
  const killer = await container.exec({ Cmd: ['kill', '-9', ...pids.map(String)], User: '0', AttachStdout: false, AttachStderr: false });
  await killer.start({ Detach: true });
  return undefined;
}
