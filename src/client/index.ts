/**
 * callwire/client/browser: connect, call, subscribe (Observable or async iterable), exec,
 * over the platform's own WebSocket and WebTransport. Platform-free: no Node module or
 * global is reachable from here (the lint rule follows the imports); Node's transports
 * are src/client-node's, which re-exports all of this.
 */
export { browserDialers, connect, connectWith, type ConnectOptions, type Dialers } from './connect.js';
export { connectWebSocket, type SocketConstructor, type SocketLike, type WebSocketPlatform } from './websocket-connection.js';
export { connectWebTransport, type OpenSession } from './webtransport-connection.js';
export { Client, type CallOptions, type OperationSummary, type TakeUp } from './client.js';
export { acknowledgeOnArrival, type AcknowledgementPolicy } from './acknowledgements.js';
export { exec, execFrames, type ExecControls, type ExecFrames, type ExecHandle, type ExecOptions, type ExecOutput, type ExecResult, type ExecSignal } from './exec.js';
export type { ExecStdin, StdinSource } from './exec-input.js';
export { DEFAULT_PARALLEL, execMany, type ExecMany, type ExecManyOptions, type TargetEnd, type TargetEvent, type TargetFrame } from './exec-many.js';
export { selectTargets, selectTargetsFrom, type Selected, type TargetSelection } from './target-selection.js';
export { ResumingConnection, type ConnectionEvent } from './resuming-connection.js';
export type { CallChannel, CallSink, ClientConnection } from './connection.js';
export { CallRoutes } from './call-routes.js';
export {
  archiveGetContract,
  archivePutContract,
  archiveStatContract,
  isDirectoryMode,
  isRegularMode,
  isSymlinkMode,
  type ArchiveTerminalFrame,
  type PathStat,
  execContract,
  exitCodeOf,
  NOT_RUN_EXIT_CODE,
  summaryOf,
  type TargetResult,
  infoContract,
  inspectContract,
  listContract,
  schemaContract,
  statsContract,
  type Contract,
  type InputOf,
  type OutputOf,
  type ServerInfo,
  type ServerStats,
} from '../contracts/index.js';
export { RpcError, protocolCodes, type Carrier, type ProtocolCode } from '../protocol/index.js';
