import { show } from '../show.js';
import { ScenarioFailure, ScenarioSkip } from '../verdict.js';
import { DEFAULT_TIMEOUT_MS, type Handler } from './handler.js';

/** The life of the run's connections and streams: opened, closed, paused, ended, reset, and what the callee does to them. */

export const connect: Handler<'connect'> = async (step, run) => {
  run.connections.set(
    step.connect,
    await run.open(step.token ?? false, {
      silent: step.silent === true,
      ...(step.path === undefined ? {} : { path: step.path }),
      ...(step.offer === undefined ? {} : { offer: step.offer }),
      ...(step.codec === undefined ? {} : { codec: step.codec }),
    }),
  );
};

export const disconnect: Handler<'disconnect'> = async (step, run) => {
  const c = run.conn(step.disconnect);
  if (step.abrupt === true && !c.drops) throw new ScenarioSkip(`needs a caller that can drop its connection without a close (this run's ${c.carrier} client cannot)`);
  await (step.abrupt === true ? c.drop() : c.close());
  run.connections.delete(step.disconnect ?? 'main');
};

export const pause: Handler<'pause'> = (step, run) => run.conn(step.on).pause(step.pause);

export const finish: Handler<'finish'> = (step, run) => run.conn(step.on).finish(step.finish);

export const reset: Handler<'reset'> = (step, run) => {
  const c = run.conn(step.on);
  if (!c.resets) throw new ScenarioSkip(`needs a caller that can reset a stream (this run's ${c.carrier} client cannot: Deno's QUIC API has no reset)`);
  return c.reset(step.reset);
};

export const expectClose: Handler<'expectClose'> = async (step, run) => {
  // Over HTTP/3 a callee may be unable to reset (the Deno edge): a stream that ends before
  // its terminal event counts as reset there (§5.4). Over HTTP/2 only a reset does.
  const h3 = run.conn(step.on).carrier === 'http/3';
  const timeoutMs = Number(step.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const event = await run.conn(step.on).events.take((e) => e.kind === 'close' || e.kind === 'stream-reset' || (h3 && e.kind === 'stream-end' && e.early === true), timeoutMs);
  if (!event) throw new ScenarioFailure(`expected the connection (or stream) to close within ${timeoutMs} ms; it stayed open`);
  if (event.kind === 'close' && step.expectClose.code !== undefined && run.conn(step.on).transport === 'websocket' && event.code !== step.expectClose.code) {
    throw new ScenarioFailure(`expected close code ${step.expectClose.code}, got ${event.code} (${event.reason})`);
  }
};

export const expectPing: Handler<'expectPing'> = async (step, run) => {
  const timeoutMs = Number(step.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const event = await run.conn(step.on).events.take((e) => e.kind === 'ping' || e.kind === 'close', timeoutMs);
  if (event?.kind !== 'ping') throw new ScenarioFailure(`expected a ping within ${timeoutMs} ms, got ${event ? show(event) : 'nothing'}`);
};

export const expectEnd: Handler<'expectEnd'> = async (step, run) => {
  const c = run.conn(step.on);
  const event = await c.events.take((e) => (e.kind === 'stream-end' || e.kind === 'stream-reset' || e.kind === 'frame') && e.id === step.expectEnd.id, step.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  if (event?.kind !== 'stream-end') throw new ScenarioFailure(`expected the stream of ${step.expectEnd.id} to end cleanly, got ${event ? show(event) : 'nothing'}`);
};
