import { z } from 'zod';
import { bytesSchema } from './bytes.js';
import { defineContract } from './contract.js';
import { envEntry, execOutputFrame } from './docker-exec.js';
import { dockerErrors } from './docker-errors.js';

/** The most a caller may ask for: one identity's exec sessions (`maxExecSessionsPerIdentity`) bound it anyway. */
export const MAX_FAN_OUT_PARALLEL = 256;
/** A larger selection is refused before any target runs (docs/security.md "Fan-out"). */
export const MAX_FAN_OUT_TARGETS = 10_000;
/** An error message kept in a target's result is cut to this many characters, so a summary stays bounded. */
export const MAX_RESULT_MESSAGE_CHARS = 200;

/** How one target ended: its exit code, or why it could not run (then it counts as 123). */
export const targetResult = z.strictObject({
  target: z.string(),
  exitCode: z.number().int().optional(),
  error: z.strictObject({ code: z.string(), message: z.string() }).optional(),
  stdoutBytes: z.number().int().min(0),
  stderrBytes: z.number().int().min(0),
});
export type TargetResultItem = z.output<typeof targetResult>;

/** The last item of a fan-out: every target's result and the exit code they make together (pdsh -S). */
export const fanOutSummary = z.strictObject({
  summary: z.strictObject({
    targets: z.number().int().min(0),
    exitCode: z.number().int(),
    text: z.string().describe('one line, as `callwire exec -l` prints on stderr: "12 targets: 10 exit 0, 1 exit 3 (a/web-2), 1 not run (…)"'),
    results: z.array(targetResult),
  }),
  terminal: z.literal(true),
});
export type FanOutSummary = z.output<typeof fanOutSummary>;

const labelSelector = z
  .string()
  .min(1)
  .regex(/^[^=]+(=.*)?$/, 'must be KEY or KEY=VALUE');
const targetPattern = z.string().min(1).describe('a name, HOST/NAME, or a glob with * in either part');

export const execManyContract = defineContract({
  name: 'docker/container/exec-many',
  kind: 'subscription',
  description: [
    'Runs one command in every running container the selection names, like callwire exec -l or --targets: ' +
      'labels (KEY or KEY=VALUE, all must match) and targets (names, HOST/NAME, globs with *), their intersection when both are given. ' +
      "A label or a glob takes the caller's own containers and those callwire did not create, not another caller's (anyOwner takes them); " +
      'a name written whole is taken whoever owns it, and one no running container has is run as written and reported not run with the reason.',
    'Each target is an exec of docker/container/exec made as the caller, with the caller\'s scopes and caps, parallel at a time (default 64). ' +
      'Output: first {targets, owners, othersLeftOut}, the selection; {target, frame} for each exec frame; {target, result} as each target ends ' +
      '(then one for each target the selection meant that cannot run: a known container of a host that is down, HOST/* for a host that did not answer); and last ' +
      '{summary: {targets, exitCode, text, results}, terminal: true}: exitCode is 0 when every target exited 0, ' +
      'else the largest exit code, a target that could not run counting as 123.',
    'On a fleet gateway it runs at the gateway, over every host the caller may reach. Cancelling the call stops every target.',
  ].join('\n\n'),
  commandEnd: (item) => {
    const parsed = fanOutSummary.safeParse(item);
    if (!parsed.success) return undefined;
    const { exitCode, results } = parsed.data.summary;
    return { exitCode, stdoutBytes: sum(results, 'stdoutBytes'), stderrBytes: sum(results, 'stderrBytes') };
  },
  input: z
    .strictObject({
      labels: z.array(labelSelector).optional().describe('KEY or KEY=VALUE; every one must match'),
      targets: z.array(targetPattern).optional().describe('names, HOST/NAME or globs; any one may match'),
      anyOwner: z.boolean().optional().describe("take other callers' containers too (docs/security.md \"Fan-out\")"),
      cmd: z.array(z.string()).min(1, 'must name a command'),
      parallel: z.number().int().min(1).max(MAX_FAN_OUT_PARALLEL).optional().describe("execs at once (default: execMany's, 64)"),
      timeoutMs: z.number().int().min(1).optional().describe("each target's own deadline"),
      env: z.array(envEntry).optional(),
      workingDir: z.string().min(1).optional(),
      user: z.string().min(1).optional(),
      stdin: bytesSchema.optional().describe('the same bytes on every target\'s stdin, then end of file'),
      encoding: z.enum(['utf8', 'binary']).default('utf8'),
    })
    .refine((input) => (input.labels?.length ?? 0) + (input.targets?.length ?? 0) > 0, 'select targets with labels, targets or both'),
  output: z.union([
    z
      .strictObject({
        targets: z.array(z.string()),
        owners: z.record(z.string(), z.string().nullable()).optional().describe('each listed target\'s owner: the subject that created it through callwire, null where callwire did not'),
        othersLeftOut: z.number().int().min(0).optional().describe("running containers the selection matched and left out, for other callers created them"),
      })
      .describe('the first item: every target the selection named, before any runs'),
    z.strictObject({ target: z.string(), frame: execOutputFrame }).describe('a frame of one target'),
    z.strictObject({ target: z.string(), result: targetResult }).describe('one target ended'),
    fanOutSummary.describe('the terminal item: last value before call.completed'),
  ]),
  // The selection's list failing is the call's error; a target's failure is its result.
  errors: { DOCKER_ERROR: dockerErrors.DOCKER_ERROR },
  access: { requiredScopes: ['container:exec'] },
});

function sum(results: readonly TargetResultItem[], field: 'stdoutBytes' | 'stderrBytes'): number {
  return results.reduce((total, result) => total + result[field], 0);
}
