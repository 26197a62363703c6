/**
 * callwire dispatcher: operations, registry and the per-connection FrameConnection.
 * Imports only callwire/protocol. Normative text: spec/PROTOCOL.md.
 */
export {
  defineOperation,
  assertOperationShape,
  isUnary,
  isIdempotent,
  type Operation,
  type OperationKind,
  type UnaryOperation,
  type SubscriptionOperation,
  type CallContext,
  type AccessControl,
  type DeclaredError,
  type StreamSource,
} from './operation.js';
export type { ResumeSeam, SeamStream, SeamResumption } from './resume-seam.js';
export { deriveContext } from './call-context.js';
export { Registry } from './registry.js';
export { checkAccess, checkResumeAccess, holdsScope, type IdentityCheck } from './access.js';
export { FrameConnection, type FrameConnectionOptions, type FrameConnectionStats } from './frame-connection.js';
export { OutboundGauge } from './outbound-gauge.js';
export type { ResumeRegistry } from './resume-registry.js';
export { CallTable, type CallTableOptions, type CallTableStats } from './call-table.js';
export type { LiveCall } from './live-call.js';
export type { CallRequest } from './admission.js';
export type { CallEvent, CallOutlet, Sized } from './call-outlet.js';
export type { CallObserver, CallOutcome, ObservedCall, ObserveCalls, ObserveRefusals, ObserveResumes, RefusedCall, ResumeAttempt } from './call-observer.js';
export { createDispatcher, type ConnectOptions, type Dispatcher, type DispatcherOptions, type ParentCall } from './dispatcher.js';
export { resolveLimits, type DispatcherLimits } from './limits.js';
export type { FrameTransport, StreamSink, StreamEntry } from './transport.js';
export { silentLogger, bindLogger, type Identity, type Logger } from './identity.js';
export { describeOperation, toJsonSchema, namespaceOf, type OperationSpec } from './describe.js';
export { bytesSchema } from '../contracts/index.js';
export type { CommandEnd, CopyEnd } from '../contracts/index.js';
