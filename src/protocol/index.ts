/**
 * callwire/protocol: frames, codecs, framing, codes and limits.
 * Imports nothing else of ours (spec/PROTOCOL.md is the normative text).
 */
export { eventTypes, isEventType, calleeEvents, type EventType } from './event-types.js';
export type { Carrier, WebTransportCarrier } from './carrier.js';
export { pinnedCertificate } from './pinned-certificate.js';
export {
  envelopeSchema,
  requestedPayloadSchema,
  respondedPayloadSchema,
  completedPayloadSchema,
  abortedPayloadSchema,
  errorPayloadSchema,
  callIdSchema,
  type Envelope,
  type EnvelopeOf,
  type RequestedPayload,
  type RespondedPayload,
  type ErrorPayload,
  type ResumePayload,
} from './envelope.js';
export { parseEnvelope, describeZodError, type ParseResult } from './parse.js';
export { ProtocolError, type ProtocolErrorKind } from './protocol-error.js';
export {
  codecs,
  msgpackCodec,
  jsonCodec,
  jsonText,
  subprotocols,
  codecForSubprotocol,
  sniffCodec,
  type Codec,
  type CodecName,
} from './codec.js';
export { FrameDecoder, checkFrameBody, encodeFrame, setFrameLength } from './framing.js';
export { concatBytes } from './bytes.js';
export { toBase64, fromBase64 } from './base64.js';
export { protocolCodes, isProtocolCode, closeCodes, SHUTDOWN_REASON, isServerShutdown, type ProtocolCode, type CodeInfo, type CloseCode } from './codes.js';
export { RpcError } from './rpc-error.js';
export { limits, type Limits } from './limits.js';
export { ENVELOPE_LEVELS, nestedArrays } from './nesting.js';
export { envelopes, decodeEnvelope, encodeEnvelope, outputFrameEncoder } from './frames.js';
export { isLoopbackName } from './loopback.js';
export { SHARED_STREAM_TYPE, SHARED_STREAM_VERSION, sharedStreamFrame } from './shared-stream.js';
