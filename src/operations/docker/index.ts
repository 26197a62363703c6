import { DEFAULT_LABEL_PREFIX } from '../../contracts/index.js';
import type { Operation } from '../../dispatcher/index.js';
import { archiveOperations } from './archive.js';
import { containerOperations } from './containers.js';
import type { DockerEngine } from './engine.js';
import { execOperation } from './exec.js';
import { imageOperations } from './images.js';
import { logsOperation } from './logs.js';

export { dockerEngine, probeDocker, type DockerEngine } from './engine.js';
export { engineList, engineStream } from './engine-request.js';

/** The Docker operations over one engine; `labelPrefix` names the ownership labels. */
export function dockerOperations(engine: DockerEngine, labelPrefix = DEFAULT_LABEL_PREFIX): Operation[] {
  return [execOperation(engine, labelPrefix), logsOperation(engine, labelPrefix), ...containerOperations(engine, labelPrefix), ...imageOperations(engine), ...archiveOperations(engine, labelPrefix)];
}
