/**
 * Who runs: the server process of this build (and of the baseline build, with
 * `--baseline`), and the subjects connected to them. Each subject names its peers here,
 * the one place that says what is compared with what.
 */
import type { Client } from '../src/client/index.js';
import { loadBuild, THIS_DIST, type Build } from './built.js';
import { BASELINE, CALLWIRE_CLI, DOCKER, FORMAT_CEILING, GRPC, HTTP, HTTP_CEILING, HTTP_FETCH, RAW_WS, WEBSOCKET, WEBSOCKET_RESUMABLE, WEBTRANSPORT_H2, WEBTRANSPORT_H3 } from './names.js';
import type { Options } from './options.js';
import { startServerProcess, type Addresses, type ServerProcess } from './server-process.js';
import { keepsCalls } from './stats.js';
import type { Subject } from './subject.js';
import { callwireSubject, resumableStreamSubject } from './subjects/callwire.js';
import { callwireCliSubject, dockerCliSubject } from './subjects/cli-process.js';
import { formatCeilingSubject } from './subjects/format-ceiling.js';
import { grpcSubject } from './subjects/grpc.js';
import { httpCeilingSubject, httpSubject } from './subjects/http.js';
import { rawWsSubject } from './subjects/raw-ws.js';

/** One build's callwire server, for the scenarios that measure the server itself (memory, growth, scaling). */
export interface CallwireServer {
  /** `callwire WebSocket`, or with `(baseline)`. */
  readonly name: string;
  readonly peers: readonly string[];
  readonly build: Build;
  readonly addresses: Addresses;
  /** Its long-lived WebSocket client. */
  readonly ws: Client;
  connect(): Promise<Client>;
  /**
   * The name its resumable calls' rows carry, and their peers; absent for a build whose
   * server does not keep a call past its connection (a baseline from before spec §4.9).
   */
  readonly resumable?: { readonly name: string; readonly peers: readonly string[] };
}

/** How long a bench client asks the server to keep its resumable calls (the server caps it). */
export const RESUME_GRACE_MS = 30_000;

export interface Lineup {
  readonly subjects: readonly Subject[];
  /** This build's first. */
  readonly servers: readonly CallwireServer[];
  readonly docker: { readonly on: boolean; readonly reason: string };
  close(): Promise<void>;
}

interface Started {
  readonly server: CallwireServer;
  readonly subjects: Subject[];
  readonly process: ServerProcess;
}

/** One build's server process and its callwire subjects; `suffix` names the build in every row. */
async function startBuild(build: Build, suffix: string, options: Options, baselineToo: boolean): Promise<Started> {
  const serverProcess = await startServerProcess(build);
  const { addresses } = serverProcess;
  const { connect } = build.client;
  /** A row's peers: the same subject of the baseline build, when there is one. */
  const peers = (name: string, others: readonly string[]): string[] => [...others, ...(baselineToo ? [`${name}${BASELINE}`] : [])];
  const ws = await connect(addresses.wsUrl);
  const wsName = `${WEBSOCKET}${suffix}`;
  const subjects: Subject[] = [
    callwireSubject(wsName, build, ws, { peers: peers(WEBSOCKET, [GRPC, RAW_WS, FORMAT_CEILING, DOCKER]), processes: { server: serverProcess.pid, client: process.pid } }),
  ];
  const resumable = (await keepsCalls(ws)) ? { name: `${WEBSOCKET_RESUMABLE}${suffix}`, peers: peers(WEBSOCKET_RESUMABLE, []) } : undefined;
  if (resumable) {
    const client = await connect(addresses.wsUrl, { resume: { graceMs: RESUME_GRACE_MS } });
    subjects.push(resumableStreamSubject(resumable.name, client, [wsName, ...resumable.peers]));
  }
  if (!options.quick) {
    const h2 = await connect(addresses.wtUrl, { certHash: addresses.certHash, transport: 'h2' });
    subjects.push(callwireSubject(`${WEBTRANSPORT_H2}${suffix}`, build, h2, { peers: peers(WEBTRANSPORT_H2, [GRPC, DOCKER]), processes: { server: serverProcess.pid, client: process.pid } }));
    // WebTransport over HTTP/3 (QUIC): the server's Deno edge and this process's. The
    // edges are processes of their own, so no per-process CPU rows.
    const h3 = await connect(addresses.wtUrl, { certHash: addresses.certHash, transport: 'h3' }).catch((error: unknown) => {
      console.error(`  HTTP/3 rows skipped: ${String(error)}`);
      return undefined;
    });
    if (h3) subjects.push(callwireSubject(`${WEBTRANSPORT_H3}${suffix}`, build, h3, { peers: peers(WEBTRANSPORT_H3, [GRPC, DOCKER]) }));
  }
  subjects.push(httpSubject(`${HTTP}${suffix}`, addresses.wsUrl, peers(HTTP, [wsName, HTTP_CEILING, GRPC])));
  subjects.push(httpSubject(`${HTTP_FETCH}${suffix}`, addresses.wsUrl, peers(HTTP_FETCH, [`${HTTP}${suffix}`, wsName]), 'fetch'));
  if (!options.quick) subjects.push(callwireCliSubject(`${CALLWIRE_CLI}${suffix}`, build.cli, addresses.wsUrl, peers(CALLWIRE_CLI, [DOCKER])));
  const server: CallwireServer = { name: wsName, peers: peers(WEBSOCKET, []), build, addresses, ws, connect: () => connect(addresses.wsUrl), ...(resumable ? { resumable } : {}) };
  return { server, subjects, process: serverProcess };
}

export async function startLineup(options: Options): Promise<Lineup> {
  const builds = [await startBuild(await loadBuild(THIS_DIST), '', options, options.baseline !== undefined)];
  if (options.baseline) builds.push(await startBuild(await loadBuild(options.baseline), BASELINE, options, false));
  const { addresses } = builds[0]!.server;
  const subjects: Subject[] = [
    grpcSubject(addresses.grpcPort, [RAW_WS]),
    await rawWsSubject(addresses.rawPort),
    await formatCeilingSubject(addresses.rawPort, [RAW_WS]),
    httpCeilingSubject(HTTP_CEILING, addresses.rawHttpPort, [RAW_WS]),
    // Each callwire subject beside the baseline build's same subject.
    ...builds[0]!.subjects.flatMap((s) => builds.flatMap((b) => b.subjects.filter((t) => t.name === s.name || t.name === `${s.name}${BASELINE}`))),
    dockerCliSubject(),
  ];
  return {
    subjects,
    servers: builds.map((b) => b.server),
    docker: addresses.docker,
    close: async () => {
      await Promise.all(subjects.map((s) => s.close()));
      await Promise.all(builds.map((b) => b.process.stop()));
    },
  };
}
