import type { Handler } from './handler.js';

/** `wait`: sleep, in milliseconds (a number, or a `$limit:` already substituted). */
export const wait: Handler<'wait'> = async (step) => {
  await new Promise((resolve) => setTimeout(resolve, Number(step.wait)));
};

/** `repeat`: its steps `times` times, `$i` standing for the round. */
export const repeat: Handler<'repeat'> = async (step, run) => {
  const times = typeof step.repeat.times === 'number' ? step.repeat.times : Number(step.repeat.times);
  for (let i = 0; i < times; i++) for (const inner of step.repeat.steps) await run.step(inner, i);
};
