/**
 * callwire/client: connect, call, subscribe (Observable or async iterable), exec.
 * The WebSocket path has no Node-only import, so it runs in browsers too.
 */
export { connect, type ConnectOptions } from './connect.js';
export { Client, type CallOptions, type OperationSummary } from './client.js';
export { exec, type ExecHandle, type ExecOptions, type ExecOutput, type ExecResult } from './exec.js';
export { RpcError, protocolCodes, type ProtocolCode } from '../protocol/index.js';
