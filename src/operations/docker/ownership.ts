import type Docker from 'dockerode';
import { ownershipLabels } from '../../contracts/index.js';
import { holdsScope, type CallContext, type Identity } from '../../dispatcher/index.js';
import { RpcError } from '../../protocol/index.js';
import type { DockerEngine } from './engine.js';
import { engineJson } from './engine-request.js';
import { containerError } from './errors.js';

/**
 * A container created through callwire belongs to its creator: other callers may
 * not act on it unless they hold `*`. Containers callwire did not create are
 * governed by scopes alone.
 */
function ownerRefusal(labels: Record<string, string> | null | undefined, identity: Identity | null, prefix: string, containerId: string): RpcError | undefined {
  const { managed, owner } = ownershipLabels(prefix);
  if (labels?.[managed] !== 'true') return undefined;
  if (identity && (holdsScope(identity, '*') || labels[owner] === identity.subject)) return undefined;
  return RpcError.of('FORBIDDEN', `container ${containerId} belongs to another caller`);
}

/** Who acts on a container: its identity, and where a resumable call registers the check a resume must pass again (RSM-9). */
export type ContainerCaller = Pick<CallContext, 'identity' | 'requireOnResume'>;

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
 * CONTAINER_NOT_FOUND, someone else's is FORBIDDEN. The same check binds whoever resumes the call.
 */
export async function inspectOwned(engine: DockerEngine, containerId: string, caller: ContainerCaller, prefix: string): Promise<OwnedContainer> {
  // A resume of the call is held to the container it acts on (RSM-9). Until the engine has answered,
  // the labels are not known: a resume that comes first is held to a container of someone else's.
  let labels: Record<string, string> | null | undefined = { [ownershipLabels(prefix).managed]: 'true' };
  caller.requireOnResume?.((identity) => ownerRefusal(labels, identity, prefix, containerId));
  // Read up to maxAnswerBytes (DOCKER-2): labels and environment make a document as large as its creator liked.
  const path = `/containers/${encodeURIComponent(containerId)}/json`;
  const info = await engineJson<Docker.ContainerInspectInfo>(engine, { path }, engine.maxAnswerBytes, `container ${containerId}`).catch((error: unknown) => {
    throw containerError(error, containerId);
  });
  labels = info.Config.Labels;
  const refused = ownerRefusal(labels, caller.identity, prefix, containerId);
  if (refused) throw refused;
  return { info, container: engine.container(info.Id) };
}
