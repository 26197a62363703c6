import type { Logger } from '../dispatcher/index.js';
import type { AccessOptions } from './parts/access.js';
import type { AuditOptions } from './parts/audit.js';
import type { CallOptions } from './parts/calls.js';
import type { ConnectionOptions } from './parts/connections.js';
import type { DockerOptions } from './parts/docker-engine.js';
import type { FleetOptions } from './parts/fleet-gateway.js';
import type { HttpListenOptions } from './parts/http-listeners.js';
import type { MetricsPageOptions } from './parts/metrics.js';
import type { RecordingOptions } from './parts/recordings.js';
import type { WebTransportOptions } from './parts/webtransport.js';

/**
 * What `startServer` is given: each part's own options, declared beside the part
 * (src/server/parts), so the option and the code that reads it are in one file. A part
 * whose option is absent does not start, and what it alone needs is not loaded: NATS
 * for `fleet`, dockerode for `docker`, the certificate maker for a WebTransport
 * server without `tls`. The CLI (`callwire serve`) maps its flags onto these.
 */
export interface ServerOptions
  extends AccessOptions,
    HttpListenOptions,
    WebTransportOptions,
    ConnectionOptions,
    CallOptions,
    DockerOptions,
    FleetOptions,
    MetricsPageOptions,
    AuditOptions,
    RecordingOptions {
  readonly logger?: Logger;
}
