import type { Operation } from '../../dispatcher/index.js';
import { archiveGetOperation, archiveStatOperation } from './archive-get.js';
import { archivePutOperation } from './archive-put.js';
import type { DockerEngine } from './engine.js';

/** stat, get and put of a path in a container (spec §12, "Archives"). */
export function archiveOperations(engine: DockerEngine, labelPrefix: string): Operation[] {
  return [archiveStatOperation(engine, labelPrefix), archiveGetOperation(engine, labelPrefix), archivePutOperation(engine, labelPrefix)];
}
