/**
 * callwire/client: connect, call, subscribe (Observable or async iterable), exec.
 * The WebSocket path has no Node-only import, so it runs in browsers too.
 */
export { connect, type ConnectOptions } from './connect.js';
export { Client, type CallOptions, type OperationSummary, type TakeUp } from './client.js';
export { acknowledgeOnArrival, type AcknowledgementPolicy } from './acknowledgements.js';
export { exec, execFrames, type ExecControls, type ExecFrames, type ExecHandle, type ExecOptions, type ExecOutput, type ExecResult, type ExecSignal } from './exec.js';
export type { ExecStdin, StdinSource } from './exec-input.js';
export { ResumingConnection, type ConnectionEvent } from './resuming-connection.js';
export type { CallChannel, CallSink, ClientConnection } from './connection.js';
export {
  execContract,
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
