import { randomUUID } from 'node:crypto';
import type { CodecName } from '../protocol/index.js';
import { rawConnect } from './raw-connection.js';
import type { RawPeer } from './raw-peer.js';
import type { RunOptions } from './runner.js';
import type { Scenario, Step } from './scenario.js';
import { DEFAULT_TIMEOUT_MS, runStep } from './steps/index.js';
import { substitute, type Substitutions } from './substitute.js';
import { ScenarioFailure } from './verdict.js';

/** How a `connect` step opens a connection. */
export interface OpenHow {
  readonly silent?: boolean;
  readonly path?: string;
  readonly offer?: string[];
  readonly codec?: CodecName;
}

/** One scenario's run against the server: its connections, its container, and what its steps remembered. */
export class ScenarioRun implements Substitutions {
  readonly nonce = randomUUID().slice(0, 8);
  readonly connections = new Map<string, RawPeer>();
  readonly resumes = new Map<string, { token: string; values: number; lastEventId: string }>();
  readonly captured = new Map<string, unknown>();
  container: string | undefined;

  constructor(
    private readonly scenario: Scenario,
    readonly options: RunOptions,
  ) {}

  get scenarioId(): string {
    return this.scenario.id;
  }

  get url(): string {
    return this.options.url;
  }

  get limits(): RunOptions['features']['limits'] {
    return this.options.features.limits;
  }

  async setUp(): Promise<void> {
    if (this.scenario.requires.includes('docker') && this.options.features.docker) {
      const { containerId } = (await this.unary('docker/container/create', {
        image: this.options.features.docker.image,
        cmd: ['sleep', '1000000'],
        labels: { 'callwire.conformance': this.scenario.id },
      })) as { containerId: string };
      this.container = containerId;
      await this.unary('docker/container/start', { containerId, timeoutSeconds: 0 });
    }
    this.connections.set('main', await this.open(this.scenario.token));
  }

  async tearDown(): Promise<void> {
    await Promise.all([...this.connections.values()].map((c) => c.close().catch(() => undefined)));
    if (this.container) await this.unary('docker/container/remove', { containerId: this.container, force: true }).catch(() => undefined);
  }

  /** Runs one step, its `$` placeholders substituted first (`index`: the round of a `repeat`). */
  async step(raw: Step, index?: number): Promise<void> {
    await runStep(substitute(raw, index, this) as Step, this, index);
  }

  open(withToken: boolean | 'scopeless', how: OpenHow = {}): Promise<RawPeer> {
    const url = new URL(this.options.url);
    if (how.path !== undefined) url.pathname = how.path;
    return rawConnect(url.toString(), {
      codec: how.codec ?? this.options.codec,
      silent: how.silent === true,
      ...(how.offer === undefined ? {} : { subprotocols: how.offer }),
      token: withToken === 'scopeless' ? this.options.scopelessToken : withToken ? this.options.token : undefined,
      certHash: this.options.certHash,
      transport: this.options.transport,
    });
  }

  conn(name = 'main'): RawPeer {
    const c = this.connections.get(name);
    if (!c) throw new ScenarioFailure(`no connection named ${name}`);
    return c;
  }

  /** A one-off call on a connection of its own (setup, and side checks such as services/stats). */
  async unary(operationId: string, input: unknown): Promise<unknown> {
    const c = await this.open(this.options.features.auth);
    try {
      const id = `side-${randomUUID()}`;
      c.sendValue({ type: 'call.requested', id, payload: { operationId, input } });
      const event = await c.events.take((e) => e.kind === 'frame' && e.id === id, DEFAULT_TIMEOUT_MS);
      const value = event?.kind === 'frame' ? (event.value as { type?: string; payload?: { output?: unknown; message?: string } }) : undefined;
      if (value?.type !== 'call.responded') throw new ScenarioFailure(`${operationId} did not answer: ${JSON.stringify(value?.payload ?? event ?? 'nothing')}`);
      return value.payload?.output;
    } finally {
      await c.close();
    }
  }
}
