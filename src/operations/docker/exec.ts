import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { z } from 'zod';
import { EXEC_MARK_VARIABLE, execContract, type ExecInputItem } from '../../contracts/index.js';
import { defineOperation, type CallContext, type Operation } from '../../dispatcher/index.js';
import { RpcError } from '../../protocol/index.js';
import { DockerDemuxer, mergeAdjacent } from './demux.js';
import type { DockerEngine } from './engine.js';
import { containerError, engineError } from './errors.js';
import { killExec, signalExec } from './exec-control.js';
import { inspectOwned } from './ownership.js';

type ExecInput = z.output<typeof execContract.input>;
type ExecFrame = z.input<typeof execContract.output>;

/** `docker/container/exec` (spec/PROTOCOL.md §12): the contract, implemented against an engine. */
export function execOperation(engine: DockerEngine, labelPrefix: string): Operation {
  return defineOperation({ ...execContract, handler: (input, ctx) => runExec(engine, labelPrefix, input, ctx) });
}

async function* runExec(engine: DockerEngine, labelPrefix: string, input: ExecInput, ctx: CallContext): AsyncGenerator<ExecFrame> {
  const { info, container } = await inspectOwned(engine, input.containerId, ctx, labelPrefix);
  if (!info.State.Running) {
    throw new RpcError('DOCKER_ERROR', `container ${input.containerId} is not running`, { details: { statusCode: 409 } });
  }
  const tty = input.tty === false ? undefined : input.tty;
  // Marks every process of this exec, children included, for the kill (EXEC-5); random, so no other exec can know it.
  const mark = `${EXEC_MARK_VARIABLE}=${randomBytes(16).toString('hex')}`;
  const exec = await container
    .exec({
      Cmd: input.cmd,
      AttachStdout: true,
      AttachStderr: true,
      AttachStdin: input.stdin !== undefined,
      Tty: tty !== undefined,
      // Engines from API 1.42 size the terminal before the command starts; older ones get the resize below.
      ...(tty ? { ConsoleSize: [tty.rows, tty.cols] } : {}),
      // The contract refuses the caller's own CALLWIRE_EXEC; the engine puts these over the container's environment.
      Env: [...(input.env ?? []), mark],
      ...(input.workingDir ? { WorkingDir: input.workingDir } : {}),
      ...(input.user ? { User: input.user } : {}),
    })
    .catch((error: unknown) => {
      throw containerError(error, input.containerId);
    });
  if (ctx.signal.aborted) return;
  const socket = (await exec.start({ hijack: true, stdin: input.stdin !== undefined, Tty: tty !== undefined }).catch((error: unknown) => {
    throw engineError(error);
  })) as Duplex;

  let finished = false;
  let killed = false;
  const kill = (): void => {
    if (killed) return;
    killed = true;
    engine.counters.execKills++;
    socket.destroy();
    void killExec(engine, { container, containerId: info.Id, exec, mark }).then((failure) => {
      if (failure === undefined) return;
      engine.counters.execKillFailures++;
      ctx.logger.warn('could not kill an exec process', { reason: failure });
    });
  };
  // An abort that came while the engine was starting the exec must still kill it:
  // a listener added now would never fire, and a silent command would live on.
  if (ctx.signal.aborted) kill();
  else ctx.signal.addEventListener('abort', kill, { once: true });
  // A bad input item ends the call with its error, and the process with it.
  let inputFailure: RpcError | undefined;
  try {
    // The first size lands before any input applies (applyInput waits for it), so a resize sent at once is not overtaken by it.
    const sized = tty ? resize(exec, tty, true) : Promise.resolve();
    if (input.stdin !== undefined && input.stdin !== 'stream') socket.end(input.stdin);
    void applyInput(ctx.input as AsyncIterable<ExecInputItem>, { engine, container, exec, socket, input, sized, logger: ctx.logger }).catch((error: unknown) => {
      inputFailure = error instanceof RpcError ? error : new RpcError('INTERNAL', String(error));
      socket.destroy();
    });
    const counts = { stdout: 0, stderr: 0 };
    // Per-stream decoders keep state, so a character split across chunks survives.
    const decoders = { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') };
    // A terminal's output is one raw stream (the engine does not multiplex it): stdout.
    const demux = tty ? undefined : new DockerDemuxer();
    // Pulling chunk by chunk: while the caller is slow, this loop waits, the socket
    // stops reading, and the engine's writes block (spec §8).
    try {
      for await (const chunk of socket as AsyncIterable<Buffer>) {
        for (const frame of demux ? mergeAdjacent(demux.push(chunk)) : [{ stream: 'stdout' as const, data: chunk }]) {
          counts[frame.stream] += frame.data.byteLength;
          if (input.encoding === 'binary') {
            yield { stream: frame.stream, data: frame.data };
          } else {
            const text = decoders[frame.stream].decode(frame.data, { stream: true });
            if (text.length > 0) yield { stream: frame.stream, text };
          }
        }
      }
    } catch (error) {
      // A bad input item destroyed the socket: its error is the call's, not the socket's.
      throw inputFailure ?? error;
    }
    if (inputFailure) throw inputFailure;
    if (ctx.signal.aborted) return;
    if (demux && !demux.clean) throw new RpcError('DOCKER_ERROR', 'the engine ended the output in the middle of a frame', { details: {} });
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

interface Running {
  readonly engine: DockerEngine;
  readonly container: Docker.Container;
  readonly exec: Docker.Exec;
  readonly socket: Duplex;
  readonly input: ExecInput;
  readonly sized: Promise<void>;
  readonly logger: CallContext['logger'];
}

/**
 * Applies the call's input stream in order (EXEC-8): stdin bytes are written as the
 * engine takes them (a command that does not read slows the caller, through the
 * call's credit), and a resize or signal acts after everything sent before it has
 * been handed to the engine, without waiting for the command to read that stdin: a
 * Ctrl-C is not stuck behind keys nobody reads. call.end half-closes the command's
 * stdin. Rejects with the error that ends the call for an item the call cannot
 * take. An abort destroys the socket, which ends this too.
 */
async function applyInput(items: AsyncIterable<ExecInputItem>, run: Running): Promise<void> {
  const { socket, input } = run;
  // The terminal has its first size before the command reads a key: a command that asks
  // for its size at once (stty size, a shell's line editor) is not answered mid-resize.
  let controls = run.sized;
  let backedUp: Promise<void> = Promise.resolve();
  const control = (act: () => Promise<void>): void => {
    controls = controls.then(act, act);
  };
  for await (const item of items) {
    if (socket.destroyed) return;
    if ('data' in item) {
      if (input.stdin !== 'stream') throw new RpcError('INVALID_INPUT', "a {data} item needs stdin: 'stream' in the request");
      // Bytes wait for the controls sent before them, and for the engine to take the bytes before them.
      await Promise.all([controls, backedUp]);
      if (!socket.write(item.data)) backedUp = drained(socket);
    } else if ('resize' in item) {
      if (input.tty === undefined || input.tty === false) throw new RpcError('INVALID_INPUT', 'a {resize} item needs a tty in the request');
      const size = item.resize;
      control(() => resize(run.exec, size, false));
    } else {
      const signal = item.signal;
      control(async () => {
        const failure = await signalExec(run.engine, run.container, run.exec, signal).catch((error: unknown) => String(error));
        if (failure !== undefined) run.logger.warn('could not signal an exec process', { signal, reason: failure });
      });
    }
  }
  await Promise.all([controls, backedUp]);
  if (input.stdin === 'stream' && !socket.destroyed) socket.end();
}

/** Resolves when the socket can take more, or is gone; leaves no listener behind. */
function drained(socket: Duplex): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      socket.off('drain', done).off('close', done);
      resolve();
    };
    socket.on('drain', done).on('close', done);
  });
}

/**
 * Sets the terminal's size. Right after start the engine may not have the process
 * yet and refuses; like the docker CLI, the first size is retried a few times.
 */
async function resize(exec: Docker.Exec, size: { cols: number; rows: number }, first: boolean): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      // Bounded: an engine that does not answer must not hold the resizes after this one.
      await withTimeout(exec.resize({ h: size.rows, w: size.cols }), RESIZE_TIMEOUT_MS);
      return;
    } catch {
      // The process may have ended already; a size that cannot be set is then moot.
      if (!first || attempt >= 10) return;
      await new Promise((resolve) => setTimeout(resolve, 10 * (attempt + 1)));
    }
  }
}

const RESIZE_TIMEOUT_MS = 5000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
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
