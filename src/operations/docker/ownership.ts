import type Docker from 'dockerode';
import { holdsScope, type Identity } from '../../dispatcher/index.js';
import { RpcError } from '../../protocol/index.js';
import type { DockerEngine } from './engine.js';
import { engineJson } from './engine-request.js';
import { containerError } from './errors.js';

/** The two labels the server writes on containers it creates (spec §12). */
export function ownershipLabels(prefix: string): { managed: string; owner: string } {
  return { managed: `${prefix}.managed`, owner: `${prefix}.owner` };
}

/**
 * A container created through callwire belongs to its creator: other callers may
 * not act on it unless they hold `*`. Containers callwire did not create are
 * governed by scopes alone.
 */
function assertOwner(labels: Record<string, string> | null | undefined, identity: Identity | null, prefix: string, containerId: string): void {
  const { managed, owner } = ownershipLabels(prefix);
  if (labels?.[managed] !== 'true') return;
  if (identity && (holdsScope(identity, '*') || labels[owner] === identity.subject)) return;
  throw RpcError.of('FORBIDDEN', `container ${containerId} belongs to another caller`);
}

/** A container an operation may act on, as the ownership check saw it. */
export interface OwnedContainer {
  readonly info: Docker.ContainerInspectInfo;
  /**
   * The container by its full id. Every request after the check goes through this,
   * never through the caller's reference: the engine resolves a name or id prefix
   * again on each request, and by the next one it may name another caller's container
   * (a rename, or a removal that lets a prefix match another id).
   */
  readonly container: Docker.Container;
}

/**
 * Inspects a container for an operation on it: an unknown one is
 * CONTAINER_NOT_FOUND, someone else's is FORBIDDEN.
 */
export async function inspectOwned(engine: DockerEngine, containerId: string, identity: Identity | null, prefix: string): Promise<OwnedContainer> {
  // Read up to maxAnswerBytes (DOCKER-2): labels and environment make a document as large as its creator liked.
  const path = `/containers/${encodeURIComponent(containerId)}/json`;
  const info = await engineJson<Docker.ContainerInspectInfo>(engine, { path }, engine.maxAnswerBytes, `container ${containerId}`).catch((error: unknown) => {
    throw containerError(error, containerId);
  });
  assertOwner(info.Config.Labels, identity, prefix, containerId);
  return { info, container: engine.container(info.Id) };
}
