import { z } from 'zod';
import { containerAccess } from './docker-access.js';
import { dockerErrors, imageErrors } from './docker-errors.js';
import { envEntry } from './docker-exec.js';
import { containerName, containerReference, imageReference } from './engine-references.js';
import { placed } from './placement.js';

/** The prefix of the labels a server writes on the containers it creates, unless it is given another. */
export const DEFAULT_LABEL_PREFIX = 'callwire';

/** The two labels the server writes on containers it creates (spec §12): that it did, and for which subject. */
export function ownershipLabels(prefix = DEFAULT_LABEL_PREFIX): { managed: string; owner: string } {
  return { managed: `${prefix}.managed`, owner: `${prefix}.owner` };
}

/** Whom a container belongs to, by its labels: the subject that created it through callwire, or null when callwire did not create it. */
export function ownerOf(labels: Readonly<Record<string, string>>, prefix = DEFAULT_LABEL_PREFIX): string | null {
  const { managed, owner } = ownershipLabels(prefix);
  return labels[managed] === 'true' ? (labels[owner] ?? '') : null;
}

/** One row of a container list. */
export const containerSummary = z.object({
  id: z.string(),
  names: z.array(z.string()),
  image: z.string(),
  state: z.string(),
  status: z.string(),
  labels: z.record(z.string(), z.string()),
  created: z.number(),
});

/** What a container list keeps: all (default) or only running, and only the caller's. */
export const containerListFilter = z.strictObject({ all: z.boolean().default(true), owned_only: z.boolean().default(false) });

export const containerListContract = placed({
  name: 'docker/container/list',
  kind: 'query',
  description: 'Containers, running or not; owned_only keeps those this caller created through callwire.',
  input: containerListFilter.nullable(),
  output: z.object({ containers: z.array(containerSummary) }),
  errors: { DOCKER_ERROR: dockerErrors.DOCKER_ERROR },
  access: { requiredScopes: ['container:list'], resourceType: 'container', resourceAction: 'list' },
  placement: { kind: 'every-host', rows: 'containers', row: containerSummary, filter: containerListFilter },
});

export const inspectContract = placed({
  name: 'docker/container/inspect',
  kind: 'query',
  description: "The engine's full inspect document for one container.",
  input: z.strictObject({ containerId: containerReference }),
  output: z.record(z.string(), z.unknown()),
  errors: dockerErrors,
  access: containerAccess('inspect'),
  placement: { kind: 'container' },
});

export const createContract = placed({
  name: 'docker/container/create',
  kind: 'mutation',
  description: 'Creates a container. The server writes its ownership labels itself; callers cannot set them.',
  input: z.strictObject({
    image: imageReference,
    cmd: z.array(z.string()).optional(),
    env: z.array(envEntry).optional(),
    labels: z.record(z.string(), z.string()).optional(),
    name: containerName.optional(),
  }),
  output: z.object({ containerId: z.string() }),
  errors: { ...dockerErrors, IMAGE_NOT_FOUND: imageErrors.IMAGE_NOT_FOUND },
  access: { requiredScopes: ['container:create'], resourceType: 'container', resourceAction: 'create' },
  placement: { kind: 'new-container' },
});

/** start, stop and restart: the same input and answer. */
function lifecycleContract<A extends 'start' | 'stop' | 'restart'>(action: A, description: string) {
  return placed({
    name: `docker/container/${action}` as const,
    kind: 'mutation',
    description,
    input: z.strictObject({ containerId: containerReference, timeoutSeconds: z.number().int().min(0).max(3600).default(10) }),
    output: z.object({ containerId: z.string(), state: z.string() }),
    errors: dockerErrors,
    access: containerAccess(action),
    placement: { kind: 'container' },
  });
}

export const startContract = lifecycleContract('start', 'Starts a container.');
export const stopContract = lifecycleContract('stop', 'Stops a container: SIGTERM, then SIGKILL after timeoutSeconds (default 10).');
export const restartContract = lifecycleContract('restart', 'Restarts a container (stop as above, then start).');

export const removeContract = placed({
  name: 'docker/container/remove',
  kind: 'mutation',
  description: 'Removes a container; force also removes a running one.',
  input: z.strictObject({ containerId: containerReference, force: z.boolean().default(false) }),
  output: z.object({ containerId: z.string(), removed: z.literal(true) }),
  errors: dockerErrors,
  access: containerAccess('remove'),
  placement: { kind: 'container' },
});

/** One line of a container log. */
export const logLine = z.object({ stream: z.enum(['stdout', 'stderr']), timestamp: z.string(), text: z.string() });

export const logsContract = placed({
  name: 'docker/container/logs',
  kind: 'subscription',
  description:
    'A container log, one frame per line (a line over 256 Ki characters is split; its later pieces have an empty timestamp); ' +
    'follow streams new lines until the container stops or the call is aborted, however long the log is quiet. ' +
    'The log is read from the engine as the caller takes it, never whole (spec §12, DOCKER-2).',
  input: z.strictObject({ containerId: containerReference, follow: z.boolean().default(false), tail: z.number().int().min(0).optional() }),
  output: logLine,
  errors: dockerErrors,
  access: { requiredScopes: ['container:logs'], resourceType: 'container', resourceAction: 'logs', resourceIdPath: 'containerId' },
  placement: { kind: 'container' },
});
