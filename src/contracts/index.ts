/**
 * callwire contracts: each operation's name, kind and schemas, without a handler,
 * shared by the operations that implement them, the client and the CLI that call
 * them, and browser code. Imports only zod (and the protocol).
 */
export {
  defineContract,
  type Contract,
  type UnaryContract,
  type SubscriptionContract,
  type InputOf,
  type OutputOf,
  type OperationKind,
  type DeclaredError,
  type AccessControl,
  type CommandEnd,
  type CopyEnd,
  type CopyKind,
} from './contract.js';
export { bytesSchema } from './bytes.js';
export { dockerErrors, imageErrors } from './docker-errors.js';
export { containerAccess } from './docker-access.js';
export {
  execContract,
  envEntry,
  EXEC_MARK_VARIABLE,
  execOutputFrame,
  execTerminalFrame,
  isTerminalFrame,
  execInputItem,
  execSignal,
  ttySize,
  type ExecInputItem,
  type ExecOutputFrame,
  type ExecTerminalFrame,
} from './docker-exec.js';
export {
  DEFAULT_LABEL_PREFIX,
  ownershipLabels,
  ownerOf,
  containerListContract,
  containerListFilter,
  containerSummary,
  inspectContract,
  createContract,
  startContract,
  stopContract,
  restartContract,
  removeContract,
  logsContract,
  logLine,
} from './docker-containers.js';
export { imageListContract, imageSummary, imageInspectContract, pullContract } from './docker-images.js';
export {
  execManyContract,
  fanOutSummary,
  targetResult,
  MAX_FAN_OUT_PARALLEL,
  MAX_FAN_OUT_TARGETS,
  MAX_RESULT_MESSAGE_CHARS,
  type FanOutSummary,
  type TargetResultItem,
} from './docker-exec-many.js';
export { dockerContracts } from './docker-surface.js';
export { placed, type Placement, type EveryHost, type PlacedContract } from './placement.js';
export { containerName, containerReference, imageReference } from './engine-references.js';
export { NOT_RUN_EXIT_CODE, exitCodeOf, summaryOf, type TargetResult } from './fan-out-results.js';
export { listContract, schemaContract, operationSummary, operationSpec, type OperationSummary, type OperationSpec } from './discovery.js';
export {
  infoContract,
  statsContract,
  serverInfo,
  serverLimits,
  serverStats,
  type ServerInfo,
  type ServerLimits,
  type ServerStats,
} from './services.js';
export {
  archiveStatContract,
  archiveGetContract,
  archivePutContract,
  archiveTerminalFrame,
  archiveErrors,
  containerPath,
  pathStat,
  type PathStat,
  type ArchiveTerminalFrame,
} from './docker-archive.js';
export { isDirectoryMode, isRegularMode, isSymlinkMode } from './file-mode.js';
