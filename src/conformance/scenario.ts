import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { limits } from '../protocol/index.js';

/**
 * On a step that reads frames: pass over (and consume) the `call.credit` frames of its
 * ids, for a scenario that does not care how the callee renews credit. Without it a
 * credit frame is matched like any other, so a stray one fails the step (CR-6).
 */
const ignoreCredit = z.boolean().optional();

/** A wait in milliseconds, or one scaled from a limit: `"$limit:keepaliveMs*1.5"`. */
const limitedMs = z.union([z.number(), z.string()]).optional();

/** A unary call on a fresh connection, its output matched. */
const sideCall = z.strictObject({
  operationId: z.string(),
  input: z.unknown().optional(),
  expectOutput: z.unknown(),
  /** Call again until the output matches, for at most this long: waits for the callee to reach a state, on a carrier of any speed. */
  withinMs: z.number().int().positive().optional(),
});

/**
 * The steps of a scenario by kind (spec/conformance/README.md lists them with examples).
 * A step in a scenario file is an object with exactly one of these keys, its kind: the
 * loader names it as `kind` (stepOf), so a file stays as it reads and a step of no
 * known kind is refused at load, by name.
 */
const stepShapes = {
  /** `onStreamOf` (WebTransport): send on the stream of that call id instead of the frame's own. */
  send: z.strictObject({ send: z.unknown(), on: z.string().optional(), onStreamOf: z.string().optional() }),
  sendHex: z.strictObject({ sendHex: z.string(), id: z.string().optional(), on: z.string().optional() }),
  sendText: z.strictObject({ sendText: z.string(), on: z.string().optional() }),
  /** `capture`: remember fields of the matched frame by name (`{"token": "payload.token"}`), for `$captured:name` later. */
  expect: z.strictObject({ expect: z.unknown(), on: z.string().optional(), timeoutMs: z.number().optional(), ignoreCredit, capture: z.record(z.string(), z.string()).optional() }),
  expectUnordered: z.strictObject({ expectUnordered: z.array(z.unknown()), on: z.string().optional(), timeoutMs: z.number().optional(), ignoreCredit }),
  expectNone: z.strictObject({ expectNone: z.strictObject({ id: z.string(), forMs: z.number() }), on: z.string().optional(), ignoreCredit }),
  expectClose: z.strictObject({ expectClose: z.strictObject({ code: z.number().optional() }), on: z.string().optional(), timeoutMs: limitedMs }),
  /** WebSocket: the server pings this connection (§5.5). */
  expectPing: z.strictObject({ expectPing: z.strictObject({}), on: z.string().optional(), timeoutMs: limitedMs }),
  collect: z.strictObject({
    collect: z.strictObject({
      id: z.string(),
      count: z.number().int().optional(),
      output: z.unknown().optional(),
      seqField: z.string().optional(),
      /** The items' string `field`s joined (items without it add nothing) must equal this: output split across frames anyhow. */
      joined: z.strictObject({ field: z.string(), equals: z.string() }).optional(),
      /** The last item before the terminal event matches this (exec's terminal frame). */
      lastOutput: z.unknown().optional(),
      terminal: z.unknown(),
    }),
    on: z.string().optional(),
    timeoutMs: z.number().optional(),
    ignoreCredit,
  }),
  sideCall: z.strictObject({ sideCall }),
  connect: z.strictObject({
    connect: z.string(),
    token: z.union([z.boolean(), z.literal('scopeless')]).optional(),
    /** Never answer pings (WebSocket): a peer that vanished (§5.5). */
    silent: z.boolean().optional(),
    /** Another URL path on the same server, e.g. the reference's /alknet/call (§13). */
    path: z.string().optional(),
    /** WebSocket subprotocols to offer instead of the codec's; [] offers none. */
    offer: z.array(z.string()).optional(),
    /** The codec this connection speaks, when it differs from the run's. */
    codec: z.enum(['msgpack', 'json']).optional(),
  }),
  /** `abrupt`: drop the connection with no close handshake, as a network does (§4.9). */
  disconnect: z.strictObject({ disconnect: z.string().optional(), abrupt: z.boolean().optional() }),
  pause: z.strictObject({ pause: z.number(), on: z.string().optional() }),
  drain: z.strictObject({ drain: z.strictObject({ id: z.string(), afterMs: z.number() }), on: z.string().optional() }),
  finish: z.strictObject({ finish: z.string(), on: z.string().optional() }),
  reset: z.strictObject({ reset: z.string(), on: z.string().optional() }),
  /** One call over plain HTTP (spec §5.6) to the server behind the run's WebSocket URL. */
  http: z.strictObject({
    http: z.strictObject({
      method: z.string().default('POST'),
      path: z.string(),
      headers: z.record(z.string(), z.string()).default({}),
      input: z.unknown().optional(),
      bodyText: z.string().optional(),
      stallAfterBytes: z.number().int().optional(),
      closeAfterLines: z.number().int().optional(),
      /** Stop reading once `afterRecords` values have arrived, for `forMs`, then make `sideCall` (still not reading), then read on. */
      slowReader: z.strictObject({ afterRecords: z.number().int().min(1), forMs: z.number(), sideCall: sideCall.optional() }).optional(),
      /** Send the run's token as `Authorization: Bearer`. */
      token: z.boolean().optional(),
      /** Remember the answer's resume token, values and last SSE id for later steps: `$resume:name`, `$resume:name.values`, `$resume:name.lastEventId` (§5.6). */
      saveAs: z.string().optional(),
    }),
    expectStatus: z.number().int(),
    /** Matchers for response headers and trailers, by lower-case name. */
    expectHeaders: z.record(z.string(), z.unknown()).optional(),
    /** Matchers for the streamed records before the result record, exactly this many. */
    expectRecords: z.array(z.unknown()).optional(),
    /** A matcher for the result record: the last record, or the whole body. */
    expectResultRecord: z.unknown().optional(),
    timeoutMs: z.number().optional(),
  }),
  expectEnd: z.strictObject({ expectEnd: z.strictObject({ id: z.string() }), on: z.string().optional(), timeoutMs: z.number().optional() }),
  sendPrefix: z.strictObject({ sendPrefix: z.strictObject({ length: z.union([z.number(), z.string()]), plus: z.number().default(0) }), on: z.string().optional() }),
  sendFilled: z.strictObject({ sendFilled: z.strictObject({ length: z.union([z.number(), z.string()]), plus: z.number().default(0) }), on: z.string().optional() }),
  wait: z.strictObject({ wait: z.union([z.number(), z.string()]) }),
  handshake: z.strictObject({
    handshake: z.strictObject({
      subprotocols: z.array(z.string()),
      /** Request headers as a browser would send them, e.g. `Origin` and `Host` (§10.1). */
      headers: z.record(z.string(), z.string()).optional(),
      expectProtocol: z.string().optional(),
      expectStatus: z.number().optional(),
    }),
  }),
  /** A raw TCP connection to the run's port that sends `send` (or nothing): the callee must close it within handshakeTimeoutMs, answering nothing (LIM-4). */
  silentSocket: z.strictObject({ silentSocket: z.strictObject({ send: z.string().optional() }), timeoutMs: z.number().optional() }),
};

/** Its steps `times` times, `$i` standing for the round. */
const repeatShape = z.strictObject({ repeat: z.strictObject({ times: z.union([z.number().int(), z.string()]), steps: z.array(z.lazy((): z.ZodType<Step> => step)) }) });

type StepShapes = typeof stepShapes;
type RepeatStep = { kind: 'repeat'; repeat: { times: number | string; steps: Step[] } };

/** One step, named by its kind: the runner's handler table (steps/index.ts) has one entry per kind. */
export type Step = { [K in keyof StepShapes]: { kind: K } & z.output<StepShapes[K]> }[keyof StepShapes] | RepeatStep;

export type StepKind = Step['kind'];

export const stepKinds: readonly StepKind[] = [...(Object.keys(stepShapes) as (keyof StepShapes)[]), 'repeat'];

/** The kind of a step as written: the one key of it that names a kind; a message naming what is wrong otherwise. */
export function stepOf(raw: unknown): { kind: StepKind } | { error: string } {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { error: `a step is an object, got ${JSON.stringify(raw)}` };
  const keys = Object.keys(raw);
  const kinds = stepKinds.filter((kind) => keys.includes(kind));
  if (kinds.length === 1) return { kind: kinds[0]! };
  if (kinds.length > 1) return { error: `a step of two kinds: ${kinds.map((k) => `"${k}"`).join(' and ')}` };
  return { error: `unknown step ${keys.map((k) => `"${k}"`).join(', ') || '{}'}: a step is one of ${stepKinds.join(', ')}` };
}

const step: z.ZodType<Step> = z.unknown().transform((raw, ctx): Step => {
  const found = stepOf(raw);
  if ('error' in found) {
    ctx.addIssue({ code: 'custom', message: found.error });
    return z.NEVER;
  }
  const parsed = (found.kind === 'repeat' ? repeatShape : stepShapes[found.kind]).safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, code: 'custom', message: issue.message, path: issue.path });
    return z.NEVER;
  }
  return { kind: found.kind, ...parsed.data } as Step;
});

export const scenarioSchema = z.strictObject({
  id: z.string().regex(/^[a-z]+-\d{3}$/, 'ids look like unary-001'),
  title: z.string(),
  covers: z.array(z.string().regex(/^[A-Z]+-\d+$/)).min(1),
  /** Features the server must claim (features.json), e.g. "websocket", "docker", "auth". */
  requires: z.array(z.string()).default([]),
  /** Connect the main connection with the runner's token, or its token without scopes. */
  token: z.union([z.boolean(), z.literal('scopeless')]).default(false),
  steps: z.array(step).min(1),
});

export type Scenario = z.infer<typeof scenarioSchema>;

export const featuresSchema = z.strictObject({
  implementation: z.string(),
  transports: z.array(z.enum(['websocket', 'webtransport'])),
  codecs: z.array(z.enum(['msgpack', 'json'])),
  /** The server has tokens configured; the runner's token holds `*`. */
  auth: z.boolean(),
  docker: z.union([z.literal(false), z.strictObject({ image: z.string() })]),
  /** The server serves the probe operations (`conformance/*`, `serve --conformance`) the scenarios drive. */
  probes: z.boolean().default(true),
  limits: z.strictObject({
    maxInputBytes: z.number().int(),
    maxCallsInFlight: z.number().int(),
    maxFrameBytes: z.number().int(),
    /** Maps and arrays a frame may nest (LIM-2); the protocol's default when a server does not say. */
    maxNestingDepth: z.number().int().default(limits.maxNestingDepth),
    /** 0: the server sends no keepalive, or its interval is unknown. */
    keepaliveMs: z.number().int().default(0),
    /** 0: unknown. */
    maxCallsPerIdentity: z.number().int().default(0),
    /** 0: the server closes no connection for completing nothing, or its bound is unknown. */
    handshakeTimeoutMs: z.number().int().default(0),
  }),
});

export type Features = z.infer<typeof featuresSchema>;

export const defaultScenarioDir = new URL('../../spec/conformance/scenarios/', import.meta.url).pathname;
export const defaultFeaturesFile = new URL('../../spec/conformance/features.json', import.meta.url).pathname;

/** Every scenario file under `dir` (one area per file, a list of scenarios in each). */
export function loadScenarios(dir: string = defaultScenarioDir): { area: string; scenario: Scenario }[] {
  const out: { area: string; scenario: Scenario }[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const area = file.replace(/\.json$/, '');
    const list = JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown[];
    list.forEach((raw, i) => {
      const parsed = scenarioSchema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new Error(`${file} scenario ${i}: ${issue?.path.join('.')}: ${issue?.message}`);
      }
      out.push({ area, scenario: parsed.data });
    });
  }
  const seen = new Set<string>();
  for (const { scenario } of out) {
    if (seen.has(scenario.id)) throw new Error(`scenario id ${scenario.id} is used twice`);
    seen.add(scenario.id);
  }
  return out;
}

export function loadFeatures(file: string = defaultFeaturesFile): Features {
  return featuresSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
}

/** A probe operation named anywhere in a scenario's steps: as an operationId or in an HTTP path. */
const PROBE_OPERATION = /conformance\/[a-z]/;

/** What a scenario needs of the server: what it says, and the probe operations when its steps call one. */
export function needsOf(scenario: Scenario): string[] {
  return PROBE_OPERATION.test(JSON.stringify(scenario.steps)) ? [...scenario.requires, PROBES] : scenario.requires;
}

/** The feature a scenario needs when its steps call the probe operations. */
export const PROBES = 'probes';
