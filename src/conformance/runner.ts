import { randomUUID } from 'node:crypto';
import { isLoopbackName, nestedArrays, type CodecName } from '../protocol/index.js';
import type { WtCarrierChoice } from '../webtransport/index.js';
import { idOf, type RawEvent } from './events.js';
import { mismatch } from './match.js';
import { sendHttp } from './http-step.js';
import { probeHandshake, rawConnect } from './raw-connection.js';
import type { RawPeer } from './raw-peer.js';
import type { Features, Scenario, Step } from './scenario.js';
import { silentSocket } from './silent-socket.js';

type CollectStep = Extract<Step, { collect: unknown }>['collect'];
type SideCall = Extract<Step, { sideCall: unknown }>['sideCall'];

export interface RunOptions {
  readonly url: string;
  readonly codec: CodecName;
  readonly features: Features;
  readonly token?: string | undefined;
  /** A valid token that holds no scopes, for the AUTH-4 scenarios. */
  readonly scopelessToken?: string | undefined;
  readonly certHash?: string | undefined;
  /** WebTransport only: the carrier (HTTP/3, HTTP/2, or auto). */
  readonly transport?: WtCarrierChoice | undefined;
}

export interface ScenarioResult {
  readonly id: string;
  readonly area: string;
  readonly title: string;
  readonly covers: readonly string[];
  readonly status: 'pass' | 'fail' | 'skip';
  readonly message: string;
  readonly ms: number;
}

const DEFAULT_TIMEOUT_MS = 5000;

class ScenarioFailure extends Error {}
/** The scenario cannot run with this caller: reported as a skip with its reason, never as a pass. */
class ScenarioSkip extends Error {}

/** The features a scenario can require, from what the server claims. */
export function claimed(features: Features, transport: 'websocket' | 'webtransport', codec: CodecName, scopeless = false, loopback = false): Set<string> {
  const set = new Set<string>([transport, codec]);
  // Reached at a loopback address, the server is taken to listen on loopback, where §10.1 has it check Host.
  if (loopback) set.add('loopback');
  // Plain HTTP shares the WebSocket's port, so the WebSocket run checks it (spec §5.6).
  if (transport === 'websocket') set.add('http');
  if (scopeless) set.add('scopeless-token');
  if (features.auth) set.add('auth');
  else set.add('no-auth');
  if (features.docker) set.add('docker');
  if (features.limits.keepaliveMs > 0 && features.limits.keepaliveMs <= MAX_KEEPALIVE_UNDER_TEST_MS) set.add('keepalive');
  // Two connections' worth of calls fill it without touching maxCallsInFlight.
  const { maxCallsPerIdentity, maxCallsInFlight, handshakeTimeoutMs } = features.limits;
  if (features.auth && maxCallsPerIdentity > 0 && maxCallsPerIdentity <= 2 * maxCallsInFlight) set.add('identity-cap');
  if (handshakeTimeoutMs > 0 && handshakeTimeoutMs <= MAX_HANDSHAKE_TIMEOUT_UNDER_TEST_MS) set.add('handshake-timeout');
  return set;
}

const MAX_HANDSHAKE_TIMEOUT_UNDER_TEST_MS = 5000;

const MAX_KEEPALIVE_UNDER_TEST_MS = 5000;

/** Why a feature is missing, for the skip message: the report must not blame the server. */
const WHY_MISSING: Readonly<Record<string, string>> = {
  auth: 'the server has no tokens, so it has no anonymous callers to refuse',
  'no-auth': 'the server has tokens configured',
  docker: 'the server offers no docker/container/exec',
  'scopeless-token': 'no --scopeless-token was given',
  loopback: 'the server is not reached at a loopback address, so it need not check Host',
  keepalive: `the server's keepalive is off or longer than ${MAX_KEEPALIVE_UNDER_TEST_MS} ms (serve --keepalive 1 runs it)`,
  'identity-cap': 'tokens and a maxCallsPerIdentity of at most twice maxCallsInFlight (serve --max-calls-per-identity 128 --max-calls-in-flight 64 runs it)',
  'handshake-timeout': `the server's handshakeTimeoutMs is off, unknown or longer than ${MAX_HANDSHAKE_TIMEOUT_UNDER_TEST_MS} ms (serve --handshake-timeout 1 runs it)`,
  websocket: 'this run is over WebTransport',
  http: 'plain HTTP is served on the WebSocket port; the WebSocket run checks it',
  webtransport: 'this run is over WebSocket',
  msgpack: 'this run uses the json codec',
  json: 'this run uses the msgpack codec',
};

export async function runScenario(area: string, scenario: Scenario, options: RunOptions): Promise<ScenarioResult> {
  const started = Date.now();
  const transport = new URL(options.url).protocol === 'https:' ? 'webtransport' : 'websocket';
  const have = claimed(options.features, transport, options.codec, options.scopelessToken !== undefined, isLoopbackName(new URL(options.url).hostname));
  const base = { id: scenario.id, area, title: scenario.title, covers: scenario.covers };
  const missing = scenario.requires.filter((f) => !have.has(f));
  if (missing.length > 0) return { ...base, status: 'skip', message: `needs ${missing.map((f) => `${f} (${WHY_MISSING[f] ?? 'not claimed'})`).join(', ')}`, ms: 0 };
  const run = new ScenarioRun(scenario, options);
  try {
    await run.setUp();
    for (const step of scenario.steps) await run.step(step);
    return { ...base, status: 'pass', message: '', ms: Date.now() - started };
  } catch (error) {
    if (error instanceof ScenarioSkip) return { ...base, status: 'skip', message: error.message, ms: Date.now() - started };
    return { ...base, status: 'fail', message: error instanceof Error ? error.message : String(error), ms: Date.now() - started };
  } finally {
    await run.tearDown();
  }
}

class ScenarioRun {
  private readonly nonce = randomUUID().slice(0, 8);
  private readonly connections = new Map<string, RawPeer>();
  /** What `http` steps with `saveAs` remembered of their answers (§5.6's resume). */
  private readonly resumes = new Map<string, { token: string; values: number; lastEventId: string }>();
  private container: string | undefined;
  /** Values `expect` steps captured by name (a resume token), for `$captured:name`. */
  private readonly captured = new Map<string, unknown>();

  constructor(
    private readonly scenario: Scenario,
    private readonly options: RunOptions,
  ) {}

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

  private open(withToken: boolean | 'scopeless', how: { silent?: boolean; path?: string; offer?: string[]; codec?: CodecName } = {}): Promise<RawPeer> {
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

  private conn(name = 'main'): RawPeer {
    const c = this.connections.get(name);
    if (!c) throw new ScenarioFailure(`no connection named ${name}`);
    return c;
  }

  /** A one-off call on a connection of its own (setup, and side checks such as services/stats). */
  private async unary(operationId: string, input: unknown): Promise<unknown> {
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

  async step(raw: Step, index?: number): Promise<void> {
    const step = this.substitute(raw, index) as Step;
    if ('send' in step) return this.conn(step.on).sendValue(step.send, step.onStreamOf);
    if ('sendHex' in step) return this.conn(step.on).sendBytes(new Uint8Array(Buffer.from(step.sendHex, 'hex')), step.id);
    if ('sendText' in step) return this.conn(step.on).sendText(step.sendText);
    if ('expect' in step) return this.expectOne(this.conn(step.on), step.expect, step.timeoutMs ?? DEFAULT_TIMEOUT_MS, step.ignoreCredit === true, step.capture);
    if ('expectUnordered' in step) return this.expectUnordered(this.conn(step.on), step.expectUnordered, step.timeoutMs ?? DEFAULT_TIMEOUT_MS, step.ignoreCredit === true);
    if ('expectNone' in step) {
      await new Promise((resolve) => setTimeout(resolve, step.expectNone.forMs));
      const c = this.conn(step.on);
      const ofId = (e: RawEvent): boolean => e.kind === 'frame' && e.id === step.expectNone.id;
      if (step.ignoreCredit === true) while (await c.events.take((e) => ofId(e) && isCredit(e), 0));
      const extra = c.events.pending(ofId);
      if (extra.length > 0) throw new ScenarioFailure(`expected nothing more for ${step.expectNone.id}, got ${show(extra[0]!)}`);
      return;
    }
    if ('expectClose' in step) {
      // Over HTTP/3 a callee may be unable to reset (the Deno edge): a stream that ends before
      // its terminal event counts as reset there (§5.4). Over HTTP/2 only a reset does.
      const h3 = this.conn(step.on).carrier === 'http/3';
      const timeoutMs = Number(step.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      const event = await this.conn(step.on).events.take((e) => e.kind === 'close' || e.kind === 'stream-reset' || (h3 && e.kind === 'stream-end' && e.early === true), timeoutMs);
      if (!event) throw new ScenarioFailure(`expected the connection (or stream) to close within ${timeoutMs} ms; it stayed open`);
      if (event.kind === 'close' && step.expectClose.code !== undefined && this.conn(step.on).transport === 'websocket' && event.code !== step.expectClose.code) {
        throw new ScenarioFailure(`expected close code ${step.expectClose.code}, got ${event.code} (${event.reason})`);
      }
      return;
    }
    if ('expectPing' in step) {
      const timeoutMs = Number(step.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      const event = await this.conn(step.on).events.take((e) => e.kind === 'ping' || e.kind === 'close', timeoutMs);
      if (event?.kind !== 'ping') throw new ScenarioFailure(`expected a ping within ${timeoutMs} ms, got ${event ? show(event) : 'nothing'}`);
      return;
    }
    if ('collect' in step) return this.collect(this.conn(step.on), step.collect, step.timeoutMs ?? 60_000, step.ignoreCredit === true);
    if ('sideCall' in step) return this.sideCall(step.sideCall);
    if ('connect' in step) {
      this.connections.set(
        step.connect,
        await this.open(step.token ?? false, {
          silent: step.silent === true,
          ...(step.path === undefined ? {} : { path: step.path }),
          ...(step.offer === undefined ? {} : { offer: step.offer }),
          ...(step.codec === undefined ? {} : { codec: step.codec }),
        }),
      );
      return;
    }
    if ('disconnect' in step) {
      const c = this.conn(step.disconnect);
      if (step.abrupt === true && !c.drops) throw new ScenarioSkip(`needs a caller that can drop its connection without a close (this run's ${c.carrier} client cannot)`);
      await (step.abrupt === true ? c.drop() : c.close());
      this.connections.delete(step.disconnect ?? 'main');
      return;
    }
    if ('pause' in step) return this.conn(step.on).pause(step.pause);
    if ('drain' in step) {
      // Frames the callee sent before it read our last frame may still arrive: let them.
      await new Promise((resolve) => setTimeout(resolve, step.drain.afterMs));
      const c = this.conn(step.on);
      while (await c.events.take((e) => e.kind === 'frame' && e.id === step.drain.id, 0));
      return;
    }
    if ('finish' in step) return this.conn(step.on).finish(step.finish);
    if ('reset' in step) {
      const c = this.conn(step.on);
      if (!c.resets) throw new ScenarioSkip(`needs a caller that can reset a stream (this run's ${c.carrier} client cannot: Deno's QUIC API has no reset)`);
      return c.reset(step.reset);
    }
    if ('http' in step) return this.http(step);
    if ('expectEnd' in step) {
      const c = this.conn(step.on);
      const event = await c.events.take((e) => (e.kind === 'stream-end' || e.kind === 'stream-reset' || e.kind === 'frame') && e.id === step.expectEnd.id, step.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      if (event?.kind !== 'stream-end') throw new ScenarioFailure(`expected the stream of ${step.expectEnd.id} to end cleanly, got ${event ? show(event) : 'nothing'}`);
      return;
    }
    if ('sendPrefix' in step) {
      const prefix = new Uint8Array(4);
      new DataView(prefix.buffer).setUint32(0, Number(step.sendPrefix.length) + step.sendPrefix.plus, false);
      return this.conn(step.on).sendBytes(prefix);
    }
    if ('sendFilled' in step) return this.conn(step.on).sendBytes(new Uint8Array(Number(step.sendFilled.length) + step.sendFilled.plus));
    if ('wait' in step) {
      await new Promise((resolve) => setTimeout(resolve, Number(step.wait)));
      return;
    }
    if ('handshake' in step) {
      const got = await probeHandshake(this.options.url, step.handshake.subprotocols, step.handshake.headers);
      if (step.handshake.expectStatus !== undefined && got.status !== step.handshake.expectStatus) {
        throw new ScenarioFailure(`expected the upgrade to be refused with ${step.handshake.expectStatus}, got ${JSON.stringify(got)}`);
      }
      if (step.handshake.expectProtocol !== undefined && got.protocol !== step.handshake.expectProtocol) {
        throw new ScenarioFailure(`expected subprotocol "${step.handshake.expectProtocol}", got ${JSON.stringify(got)}`);
      }
      return;
    }
    if ('silentSocket' in step) {
      const wait = this.options.features.limits.handshakeTimeoutMs + (step.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      const got = await silentSocket(this.options.url, step.silentSocket.send, wait);
      if (got.error !== undefined) throw new ScenarioFailure(`could not open a TCP connection to the server: ${got.error}`);
      if (!got.closed) throw new ScenarioFailure(`a connection that completed no request stayed open ${wait} ms`);
      if (got.received > 0 && step.silentSocket.send === undefined) throw new ScenarioFailure(`the callee sent ${got.received} bytes to a connection that sent nothing`);
      return;
    }
    if ('repeat' in step) {
      const times = typeof step.repeat.times === 'number' ? step.repeat.times : Number(step.repeat.times);
      for (let i = 0; i < times; i++) for (const inner of step.repeat.steps) await this.step(inner as Step, i);
      return;
    }
  }

  /** The next frame of the expected call (by id) must match: a `call.credit` is a frame like any other, unless the step ignores credit. */
  private async expectOne(c: RawPeer, expected: unknown, timeoutMs: number, ignoreCredit: boolean, capture?: Record<string, string>): Promise<void> {
    const id = idOf(expected);
    const belongs = (e: RawEvent): boolean => e.kind === 'close' || (e.kind === 'frame' && (id === undefined || e.id === id)) || (e.kind === 'stream-reset' && e.id === id);
    const event = await takeNext(c, belongs, timeoutMs, ignoreCredit);
    if (!event) throw new ScenarioFailure(`expected ${JSON.stringify(expected)} within ${timeoutMs} ms; nothing came`);
    if (event.kind !== 'frame') throw new ScenarioFailure(`expected ${JSON.stringify(expected)}, got ${show(event)}`);
    const m = mismatch(expected, event.value);
    if (m) throw new ScenarioFailure(`frame ${show(event)} does not match: ${m}`);
    for (const [name, path] of Object.entries(capture ?? {})) {
      const value = path.split('.').reduce<unknown>((v, key) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined), event.value);
      if (value === undefined) throw new ScenarioFailure(`frame ${show(event)} has no ${path} to capture`);
      this.captured.set(name, value);
    }
  }

  /**
   * The next N frames of the expected ids, in some order, must be exactly the N
   * expected ones: a frame that came before them (a terminal frame sent too early)
   * is one of the N and fails the match, rather than being passed over.
   */
  private async expectUnordered(c: RawPeer, expected: readonly unknown[], timeoutMs: number, ignoreCredit: boolean): Promise<void> {
    const ids = new Set(expected.map(idOf));
    const belongs = (e: RawEvent): boolean => e.kind === 'close' || (e.kind === 'frame' && (ids.has(undefined) || ids.has(e.id))) || (e.kind === 'stream-reset' && ids.has(e.id));
    const got: RawEvent[] = [];
    const deadline = Date.now() + timeoutMs;
    while (got.length < expected.length) {
      const event = await takeNext(c, belongs, Math.max(0, deadline - Date.now()), ignoreCredit);
      if (!event) throw new ScenarioFailure(`expected ${expected.length} frames in any order, got ${got.length} within ${timeoutMs} ms: ${got.map(show).join(' | ') || 'none'}`);
      if (event.kind !== 'frame') throw new ScenarioFailure(`expected ${expected.length} frames in any order, got ${show(event)} after ${got.length}`);
      got.push(event);
    }
    const values = got.map((e) => (e.kind === 'frame' ? e.value : undefined));
    if (!assignable(expected, values)) {
      throw new ScenarioFailure(`the next ${expected.length} frames ${got.map(show).join(' | ')} are not, in any order, ${JSON.stringify(expected)}`);
    }
  }

  /** With `withinMs`, called again until the output matches: a state the callee reaches, on a carrier of any speed. */
  private async sideCall(spec: SideCall): Promise<void> {
    const { operationId, input, expectOutput, withinMs = 0 } = spec;
    const until = Date.now() + withinMs;
    for (;;) {
      const m = mismatch(expectOutput, await this.unary(operationId, input ?? null));
      if (!m) return;
      if (Date.now() >= until) throw new ScenarioFailure(`${operationId}: ${m}${withinMs > 0 ? ` (still, after ${withinMs} ms)` : ''}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  private async http(step: Extract<Step, { http: unknown }>): Promise<void> {
    const { token, saveAs, ...request } = step.http;
    const headers = { ...request.headers, ...(token && this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}) };
    const check = request.slowReader?.sideCall;
    const answer = await sendHttp(this.options.url, this.options.codec, { ...request, headers }, step.timeoutMs ?? 30_000, check && (() => this.sideCall(check)));
    const where = `${request.method} ${request.path}`;
    if (saveAs !== undefined) {
      const values = answer.closedEarly ? answer.records.length : answer.records.length - 1;
      this.resumes.set(saveAs, { token: answer.headers['x-callwire-resume-token'] ?? '', values, lastEventId: answer.lastEventId ?? '' });
    }
    if (answer.status !== step.expectStatus) throw new ScenarioFailure(`${where}: status ${answer.status}, expected ${step.expectStatus} (body: ${JSON.stringify(answer.records).slice(0, 300)})`);
    const headerMismatch = step.expectHeaders === undefined ? undefined : mismatch(step.expectHeaders, answer.headers);
    if (headerMismatch) throw new ScenarioFailure(`${where}: headers: ${headerMismatch}`);
    const records = step.expectEnvelope === undefined || answer.closedEarly ? answer.records : answer.records.slice(0, -1);
    if (step.expectEnvelope !== undefined) {
      if (answer.closedEarly) throw new ScenarioFailure(`${where}: closed before the envelope`);
      const m = mismatch(step.expectEnvelope, answer.records.at(-1));
      if (m) throw new ScenarioFailure(`${where}: envelope: ${m}`);
    }
    if (step.expectRecords !== undefined) {
      const m = mismatch(step.expectRecords, records);
      if (m) throw new ScenarioFailure(`${where}: records: ${m}`);
    }
  }

  /** Reads a call's responded frames up to its terminal event, checking count, shape and order. */
  private async collect(c: RawPeer, spec: CollectStep, timeoutMs: number, ignoreCredit: boolean): Promise<void> {
    let seen = 0;
    let joined = '';
    let last: unknown;
    const deadline = Date.now() + timeoutMs;
    const belongs = (e: RawEvent): boolean => e.kind === 'close' || ((e.kind === 'frame' || e.kind === 'stream-reset') && e.id === spec.id);
    for (;;) {
      const event = await takeNext(c, belongs, Math.max(0, deadline - Date.now()), ignoreCredit);
      if (!event) throw new ScenarioFailure(`collect ${spec.id}: no terminal event within ${timeoutMs} ms (${seen} items so far)`);
      if (event.kind !== 'frame') throw new ScenarioFailure(`collect ${spec.id}: ${show(event)} after ${seen} items`);
      const frame = event.value as { type?: string; payload?: { output?: Record<string, unknown> } };
      if (frame.type !== 'call.responded') {
        const m = mismatch(spec.terminal, frame);
        if (m) throw new ScenarioFailure(`collect ${spec.id}: terminal ${show(event)} does not match: ${m}`);
        if (spec.count !== undefined && seen !== spec.count) throw new ScenarioFailure(`collect ${spec.id}: expected ${spec.count} items, got ${seen}`);
        if (spec.joined && joined !== spec.joined.equals) throw new ScenarioFailure(`collect ${spec.id}: joined ${spec.joined.field} ${JSON.stringify(joined)}, expected ${JSON.stringify(spec.joined.equals)}`);
        const lastMismatch = spec.lastOutput === undefined ? undefined : mismatch(spec.lastOutput, last);
        if (lastMismatch) throw new ScenarioFailure(`collect ${spec.id}: last item: ${lastMismatch}`);
        return;
      }
      if (spec.output !== undefined) {
        const m = mismatch(spec.output, frame.payload?.output);
        if (m) throw new ScenarioFailure(`collect ${spec.id}: item ${seen}: ${m}`);
      }
      if (spec.seqField !== undefined && frame.payload?.output?.[spec.seqField] !== seen) {
        throw new ScenarioFailure(`collect ${spec.id}: item ${seen} out of order (${spec.seqField} = ${JSON.stringify(frame.payload?.output?.[spec.seqField])})`);
      }
      const piece = spec.joined ? frame.payload?.output?.[spec.joined.field] : undefined;
      if (typeof piece === 'string') joined += piece;
      last = frame.payload?.output;
      seen++;
    }
  }

  /**
   * `$id:name` → a unique call id; `$captured:name` → a value an `expect` captured; `$container`; `$origin`; `$limit:name` (or `$limit:name*factor`); `$i` in repeats;
   * `{"$base64"}` → bytes; `{"$text": {"length": n}}`; `{"$zeros": {"length": n}}` → n zero bytes;
   * `{"$nested": {"levels": n}}` → n arrays, each the only element of the one around it.
   */
  private substitute(value: unknown, index: number | undefined): unknown {
    if (typeof value === 'string') {
      let s = index === undefined ? value : value.replaceAll('$i', String(index));
      if (s.startsWith('$limit:')) {
        const [name, factor] = s.slice('$limit:'.length).split('*') as [keyof Features['limits'], string | undefined];
        return this.options.features.limits[name] * (factor === undefined ? 1 : Number(factor));
      }
      if (s === '$container') return this.container ?? s;
      if (s.startsWith('$captured:')) return this.captured.get(s.slice('$captured:'.length)) ?? s;
      if (s === '$origin') return pageOrigin(this.options.url);
      s = s.replace(/\$id:([\w-]+)/g, (_m, name: string) => `${this.scenario.id}-${name}-${this.nonce}`);
      s = s.replace(/\$resume:([\w-]+)(?:\.(values|lastEventId))?/g, (_m, name: string, field?: 'values' | 'lastEventId') => {
        const saved = this.resumes.get(name);
        if (!saved) throw new ScenarioFailure(`$resume:${name}: no earlier http step saved it`);
        return field === undefined ? saved.token : String(saved[field]);
      });
      return s;
    }
    if (Array.isArray(value)) return value.map((v) => this.substitute(v, index));
    if (value !== null && typeof value === 'object') {
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj);
      if (keys.length === 1 && typeof obj['$base64'] === 'string' && !this.inMatcher) return new Uint8Array(Buffer.from(obj['$base64'], 'base64'));
      if (keys.length === 1 && obj['$zeros'] !== undefined && !this.inMatcher) {
        const spec = this.substitute(obj['$zeros'], index) as { length: number };
        return new Uint8Array(spec.length);
      }
      if (keys.length === 1 && obj['$text'] !== undefined) {
        const spec = this.substitute(obj['$text'], index) as { length: number; plus?: number };
        return 'x'.repeat(spec.length + (spec.plus ?? 0));
      }
      if (keys.length === 1 && obj['$nested'] !== undefined) {
        const spec = this.substitute(obj['$nested'], index) as { levels: number; plus?: number };
        return nestedArrays(spec.levels + (spec.plus ?? 0));
      }
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(obj)) {
        const wasMatcher = this.inMatcher;
        if (k === 'expect' || k === 'expectUnordered' || k === 'expectOutput' || k === 'output' || k === 'terminal') this.inMatcher = true;
        out[k] = this.substitute(v, index);
        this.inMatcher = wasMatcher;
      }
      return out;
    }
    return value;
  }

  private inMatcher = false;
}

/** The origin of a page the server under test serves where the run reaches it (§10.1's same origin). */
function pageOrigin(url: string): string {
  const page = new URL(url);
  page.protocol = page.protocol === 'ws:' ? 'http:' : 'https:';
  return page.origin;
}

function typeOf(value: unknown): unknown {
  return value !== null && typeof value === 'object' ? (value as { type?: unknown }).type : undefined;
}

function isCredit(e: RawEvent): boolean {
  return e.kind === 'frame' && typeOf(e.value) === 'call.credit';
}

/**
 * The next event that `belongs`. With `ignoreCredit` the `call.credit` frames before it
 * are consumed and passed over: the step does not care how the callee renews credit.
 */
async function takeNext(c: RawPeer, belongs: (e: RawEvent) => boolean, timeoutMs: number, ignoreCredit: boolean): Promise<RawEvent | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const event = await c.events.take(belongs, Math.max(0, deadline - Date.now()));
    if (!ignoreCredit || event === undefined || !isCredit(event)) return event;
  }
}

/** Whether each expected matcher can take a distinct value (a perfect matching, by backtracking; N is small). */
function assignable(expected: readonly unknown[], values: readonly unknown[], used = new Set<number>(), at = 0): boolean {
  if (at === expected.length) return true;
  for (let i = 0; i < values.length; i++) {
    if (used.has(i) || mismatch(expected[at], values[i]) !== undefined) continue;
    used.add(i);
    if (assignable(expected, values, used, at + 1)) return true;
    used.delete(i);
  }
  return false;
}

function show(event: RawEvent): string {
  switch (event.kind) {
    case 'frame': {
      const text = JSON.stringify(event.value, (_k, v: unknown) => (v instanceof Uint8Array ? `<${v.byteLength} bytes>` : v));
      return text && text.length > 200 ? `${text.slice(0, 200)}…` : (text ?? 'undefined');
    }
    case 'close':
      return `close ${event.code}${event.reason ? ` (${event.reason})` : ''}`;
    case 'stream-reset':
      return `stream reset (${event.id ?? 'no id'})`;
    case 'stream-end':
      return `stream ended (${event.id ?? 'no id'})`;
    case 'undecodable':
      return `undecodable frame: ${event.error}`;
    case 'ping':
      return 'ping';
  }
}
