/**
 * bench/RESULTS.md, made from the results files: the tables and every figure in its
 * sentences come from the data; the explanations around them are written here.
 */
import { lossTable, type LossResult, type LossResults } from '../loss-table.js';
import { fmt } from '../measure.js';
import { CALLWIRE_CLI, DOCKER, FORMAT_CEILING, GRPC, HTTP, RAW_WS, WEBSOCKET, WEBSOCKET_RESUMABLE, WEBTRANSPORT_H2, WEBTRANSPORT_H3 } from '../names.js';
import type { Results } from '../results.js';
import type { Comparison } from '../rows.js';
import { ATTACHED, DETACHED_CALLS, FRESH_CALL, perResumableCall, SINCE_CUT_END, SINCE_RECONNECT } from '../scenarios/resume-metrics.js';
import { LARGE_ITEMS, SMALL_ITEMS, type StreamSize } from '../scenarios/streaming.js';
import { goalsTable } from './goals.js';
import { figure, given, Lookup } from './lookup.js';
import { repeatSection } from './repeat.js';
import { resultsTables, times, valueText } from './table.js';

/** `2026-12-01 08:45 UTC`. */
const when = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
const present = (lines: readonly (string | undefined)[]): string[] => lines.filter((l): l is string => l !== undefined);
const bullets = (lines: readonly (string | undefined)[]): string[] => present(lines).map((l) => `- ${l}`);

function header(results: Results, source: string): string[] {
  const { machine: m } = results;
  return [
    '# Benchmark results',
    '',
    `<!-- Generated from ${source} by \`npx tsx bench/report.ts\`; edit bench/report/page.ts, not this page. -->`,
    '',
    `Measured with \`${results.command}\` on ${when(results.date)}${results.commit ? ` at commit \`${results.commit}\`` : ''}: ${m.cores} × ${m.cpu}, ${m.memoryGiB} GiB, ` +
      `Node ${m.node}, ${m.platform}${m.docker ? `, Docker Engine ${m.docker}` : ''}, loopback${results.loadAtStart === undefined ? '' : `, load average ${results.loadAtStart.toFixed(1)} as it started`}. ${results.runs} interleaved rounds; ` +
      `the run took ${fmt(results.seconds)} s. The data: [\`${source.replace(/^bench\//, '')}\`](${source.replace(/^bench\//, '')}). ` +
      'Where the time goes, with profiles: [`PROFILE.md`](PROFILE.md).',
    '',
    ...(results.skipped.length ? [...bullets(results.skipped.map((s) => `Not measured in this run: ${s.scenario} (${s.reason}).`)), ''] : []),
  ];
}

const METHOD = [
  '## How to read it',
  '',
  'Every subject ran once per round, interleaved round by round with its peers so that a',
  'noisy minute hits all of them, every other round in reverse order, after a first round that',
  'warms each subject up and is not kept. Each row shows the median and the (min–max) of its runs;',
  'each ratio is the median (min–max) of the per-round ratios to the peer named beside it',
  '(above 1 is better for rates, below 1 for latencies, CPU and memory). callwire runs',
  'compiled (`dist/`), its server and the bench\'s own client process with `npm start`\'s Node',
  'flags (`src/cli/node-flags.ts`). Rates move between runs on a shared machine: compare',
  'ratios, and their ranges, not rates across runs; "Repeatability" says how far the ratios moved.',
  '',
  'The subjects:',
  '',
  `- **${WEBSOCKET}**, **${WEBTRANSPORT_H2}**, **${WEBTRANSPORT_H3}**: the SDK (\`connect\`) over each`,
  '  transport; in the exec rows, the SDK\'s `exec`. HTTP/3 runs through a Deno edge on each side.',
  `- **${WEBSOCKET_RESUMABLE}**: the WebSocket's SDK client made with \`resume\` (spec §4.9), so each of its`,
  '  streams asks to outlive a lost connection; streams only, in the same rounds as the plain one.',
  `- **${HTTP}**: one POST per call (spec §5.6) over keep-alive connections (fetch's pool).`,
  `- **${GRPC}**: \`@grpc/grpc-js\` with the same messages, msgpack-serialised: an equivalent service.`,
  `- **${RAW_WS}**: a raw \`ws\` server sending the same buffer again and again to a client that only`,
  '  counts bytes. No envelope format reaches it.',
  `- **${FORMAT_CEILING}**: the same raw server answering callwire's own msgpack envelopes with nothing`,
  '  but a decode of each request and an encode of each answer (no validation, no operation table,',
  '  no credit, no cancellation), and a client that decodes each answer and finds its call by id.',
  `  Its ratio to ${RAW_WS} is what the wire format costs; callwire's ratio to it is what callwire's`,
  '  machinery costs.',
  `- **${CALLWIRE_CLI}**, **${DOCKER}**: a whole CLI process per exec, its output to \`/dev/null\`.`,
  '',
  'The exec rows also give the CPU-seconds the whole machine spent per GiB of output (every',
  'process, kernel included, from `/proc/stat`), callwire\'s two processes\' own, and how busy the',
  'machine was.',
  '',
];

function highlights(l: Lookup): string[] {
  const calls = (n: number): string => `calls/s @${n} in flight`;
  return [
    '## In short',
    '',
    ...bullets([
      given(l.vs('unary', calls(1), HTTP, WEBSOCKET), l.vs('unary', calls(64), HTTP, WEBSOCKET))(
        (one, many) => `Plain HTTP, one POST per call: ${times(one)} the WebSocket's unary rate at one call in flight, ${times(many)} at 64.`,
      ),
      given(l.vs('unary', calls(1), WEBSOCKET, GRPC), l.vs('unary', calls(1), WEBSOCKET, FORMAT_CEILING), l.vs('unary', calls(64), WEBSOCKET, FORMAT_CEILING))(
        (grpc, one, many) => `Unary over the WebSocket: ${times(grpc)} grpc-js at one call in flight; ${times(one)} the format ceiling there, ${times(many)} at 64.`,
      ),
      given(l.vs('streaming', '100 B items', WEBSOCKET, GRPC), l.vs('streaming', '100 B items', WEBSOCKET, FORMAT_CEILING), l.vs('streaming', '100 B items', FORMAT_CEILING, RAW_WS))(
        (grpc, format, raw) => `Streaming 100 B items over the WebSocket: ${times(grpc)} grpc-js, ${times(format)} the format ceiling, which is itself ${times(raw)} raw \`ws\`.`,
      ),
      ...l.rowsOf('exec', 'dd ').filter((r) => r.subject === WEBSOCKET).map((r) =>
        given(r.vs.find((c) => c.peer === DOCKER))((docker) => `Exec \`${r.metric.replace(' of output', '')}\` through the SDK: ${figure(r.value, r.unit)}, ${times(docker)} docker exec's rate.`),
      ),
    ]),
    '',
  ];
}

function notes(l: Lookup): string[] {
  const keystroke = (s: string): number | undefined => l.row('exec', 'keystroke echo, tty (median)', s)?.value;
  const rtt = l.vs('exec', 'round trip of `true`', WEBSOCKET, DOCKER);
  const h3 = (group: string, metric: string): string | undefined => given(l.vs(group, metric, WEBTRANSPORT_H3, GRPC))(times);
  const execRows = l.rowsOf('exec', 'dd ');
  const busy = l.rowsOf('exec', 'machine busy').map((r) => r.value);
  const cpu = l.vs('exec', 'machine CPU-seconds per GiB of output', WEBSOCKET, DOCKER);
  const execRate = given(execRows.find((r) => r.subject === WEBSOCKET)?.vs.find((c) => c.peer === DOCKER))(times);
  return [
    '## Notes',
    '',
    ...bullets([
      given(keystroke(CALLWIRE_CLI), keystroke(DOCKER))(
        (ours, docker) =>
          `**Keystrokes**: a key typed into a pty (util-linux \`script\`) goes through each CLI and the engine to a \`cat\` on a raw remote tty and back, the median of 200 keys a session, a session of each CLI (a whole process) per round: ${figure(ours, 'ms')} through callwire, ${figure(docker, 'ms')} through docker. callwire's path has two Node processes more than docker's (the CLI and the server); where the time goes: \`PROFILE.md\`, "A keystroke's path".`,
      ),
      given(rtt)(
        (c) =>
          `**An exec's round trip** (\`true\`, start to exit code) through the SDK is ${times(c)} docker's${c.ratio < 1 ? ': the docker CLI starts a process for every call' : ''}.`,
      ),
      given(h3('streaming', '100 B items'), h3('streaming', '64 KiB items'), h3('unary', 'calls/s @1 in flight'), h3('unary', 'calls/s @64 in flight'))(
        (small, large, one, many) =>
          `**HTTP/3** against grpc-js in the same rounds: streaming 100 B items ${small}, 64 KiB items ${large}; unary ${one} at one call in flight and ${many} at 64. Each call crosses four processes (the client, its Deno edge, the server's Deno edge, the server; \`PROFILE.md\`, "HTTP/3"). On a lossy link the ranking turns over: see [Loss](#loss).`,
      ),
      given(cpu, execRate, busy.length ? busy : undefined)(
        (c, rate, b) =>
          `**The exec row is bound by the whole machine's CPU**: every path kept the cores ${fmt(Math.min(...b))}–${fmt(Math.max(...b))}% busy, docker's too, and callwire's path cost the machine ${times(c)} the CPU per GiB of docker's, for its two processes and the loopback hop between them; its MB/s ratio (${rate}) follows. \`PROFILE.md\` ("The exec row is CPU-bound") accounts for each process.`,
      ),
    ]),
    '',
  ];
}

function costGrowth(l: Lookup): string[] {
  const growth = (metric: string): number | undefined => l.row('growth', metric, WEBSOCKET)?.value;
  const inFlight = [1, 64, 1024];
  const latency = inFlight.map((n) => given(growth(`unary p50, ${fmt(n)} in flight`), growth(`unary p99, ${fmt(n)} in flight`))((p50, p99) => `${figure(p50)} / ${figure(p99)} ms`));
  const rates = inFlight.map((n) => growth(`unary calls/s, ${fmt(n)} in flight`));
  const scaling = [1, 100, 10_000].map((n) => l.row('scaling', `items/s, 100 B items, ${fmt(n)} concurrent subscription(s)`, WEBSOCKET));
  const heap = [1_000, 10_000, 50_000].map((n) => l.row('memory', `heap per live subscription (${fmt(n)} live)`, WEBSOCKET)?.value);
  const cell = (v: number | string | undefined): string => (v === undefined ? '-' : typeof v === 'string' ? v : figure(v));
  if (rates.every((r) => r === undefined) && scaling.every((r) => r === undefined) && heap.every((h) => h === undefined)) return [];
  const fall = scaling[2]?.vs.find((c) => c.peer === '1 subscription');
  return [
    '## Cost growth',
    '',
    'One server process, one WebSocket for unary, loopback.',
    '',
    '| load | 1 | 64 | 1,024 |',
    '|---|---:|---:|---:|',
    `| unary in flight: p50 / p99 latency | ${latency.map(cell).join(' | ')} |`,
    `| unary in flight: calls/s | ${rates.map(cell).join(' | ')} |`,
    '',
    '| load | 1 | 100 | 10,000 |',
    '|---|---:|---:|---:|',
    `| concurrent subscriptions: total 100 B items/s | ${scaling.map((r) => cell(r?.value)).join(' | ')} |`,
    '',
    '| load | 1,000 | 10,000 | 50,000 |',
    '|---|---:|---:|---:|',
    `| idle subscriptions: server heap per subscription | ${heap.map((h) => (h === undefined ? '-' : `${figure(h)} KiB`)).join(' | ')} |`,
    '',
    ...present([
      given(rates[1], rates[2], growth('unary p50, 1,024 in flight'))(
        (at64, at1024, p50) =>
          `Where it stops scaling: the server is one Node thread. At 64 calls in flight both cores work (write batches grow within a turn, so each end starts on the other's first write); from 64 to 1,024 in flight the rate grows ${(at1024 / at64).toFixed(2)}×, and past that more calls in flight only queue: at 1,024 in flight the p50 (${figure(p50, 'ms')}) is about the queue's length over the rate (1,024 / ${fmt(at1024)} s ≈ ${figure((1024 / at1024) * 1000, 'ms')}).`,
      ),
      given(fall)(
        (c) =>
          `At 10,000 concurrent subscriptions (1,000 per connection) the total is ${times(c)} one subscription's: the pull sources share one budget of items per turn (\`src/dispatcher/pump.ts\`), so each of thousands of waiting calls resumes for about one item per turn, and each item then touches a different call's generator, pump and buffers, cold in cache (\`PROFILE.md\`, "Per item").`,
      ),
      given(heap[2])((h) => `Memory grows linearly: ${figure(h, 'KiB')} of server heap per idle subscription at 50,000 (${fmt((h * 50_000) / 1024)} MiB in all).`),
    ]).flatMap((p) => [p, '']),
  ];
}

/** µs more per item for the resumable stream than for the plain one: the plain stream's time per item and the median ratio. */
function extraPerItem(unit: string, c: Comparison, itemBytes: number): string {
  const plain = unit === 'items/s' ? 1e6 / c.peerValue : itemBytes / c.peerValue;
  const extra = plain * (1 / c.ratio - 1);
  return `${extra < 0 ? '−' : '+'}${fmt(Math.abs(extra), 2)} µs per item`;
}

function resumable(l: Lookup): string[] {
  const stream = ({ label, itemBytes }: StreamSize): string | undefined => {
    const row = l.row('streaming', label, WEBSOCKET_RESUMABLE);
    const c = row?.vs.find((v) => v.peer === WEBSOCKET);
    return given(row, c)((r, plain) => `${label} at ${times(plain)} the plain stream's rate (${extraPerItem(r.unit, plain, itemBytes)})`);
  };
  const cutEnd = l.rowsOf('resume', SINCE_CUT_END).find((r) => r.subject === WEBSOCKET_RESUMABLE);
  const reconnect = l.rowsOf('resume', SINCE_RECONNECT).find((r) => r.subject === WEBSOCKET_RESUMABLE);
  const fresh = reconnect?.vs.find((c) => c.peer === FRESH_CALL);
  const heap = l.row('memory', perResumableCall('heap', 'detached'), WEBSOCKET_RESUMABLE);
  const replay = l.row('memory', perResumableCall('replay kept', 'detached'), WEBSOCKET_RESUMABLE);
  const lines = present([
    given(stream(SMALL_ITEMS), stream(LARGE_ITEMS))(
      (small, large) =>
        `**The sequence's cost**: the WebSocket's streams asking to outlive a lost connection (every item numbered, kept until acknowledged), interleaved with the plain ones in the same rounds: ${small}; ${large}.`,
    ),
    given(cutEnd, reconnect, fresh)(
      (end, since, c) =>
        `**Back after a cut**: a TCP relay down in the middle of a resumable stream (\`${end.metric}\`): the first item from after the cut reached the consumer ${valueText(end)} after the relay took connections again, most of it the client's wait between dials (a backoff with jitter, \`src/client/resuming-connection.ts\`), which a cut of another length puts elsewhere. From the relay taking the client's new connection it took ${valueText(since)}: ${times(c)} a fresh connect and first unary call through the same relay (${figure(c.peerValue, 'ms')}), the least a client that starts over without resume pays, and it has lost the call's output besides.`,
    ),
    given(heap, heap?.vs.find((c) => c.peer === ATTACHED), replay)(
      (h, attached, r) =>
        `**Detached calls**: ${fmt(DETACHED_CALLS)} resumable calls whose connection was lost, each waiting for its caller with one item it had not acknowledged, held ${figure(h.value, 'KiB')} of server heap each (${figure((h.value * DETACHED_CALLS) / 1024, 'MiB')} for the ${fmt(DETACHED_CALLS)}), ${times(attached)} the same calls attached; their replay logs kept ${figure(r.value, 'B')} each, which the replay budget counts (\`services/stats\` \`replayBytes\`).`,
    ),
  ]);
  if (!lines.length) return [];
  return ['## Resumable calls', '', 'Spec §4.9; how to read these rows: `PROFILE.md`, "Reading the results".', '', ...lines.flatMap((p) => [p, ''])];
}

/** What share of its own lossless rate each carrier kept at each loss rate. */
function keptShares(data: LossResults): string[] {
  const carriers = [...new Set(data.results.map((r) => r.carrier))];
  const losses = [...new Set(data.results.map((r) => r.loss))].filter((l) => l > 0);
  const at = (carrier: string, loss: number): LossResult | undefined => data.results.find((r) => r.carrier === carrier && r.loss === loss);
  const share = (carrier: string, key: 'mbPerSec' | 'callsPerSec'): string | undefined => {
    const base = at(carrier, 0)?.[key];
    const shares = losses.map((l) => at(carrier, l)?.[key]);
    if (!base || shares.some((v) => v === undefined)) return undefined;
    return shares.map((v) => `${fmt((100 * v!) / base)}%`).join(' and ');
  };
  const lossNames = losses.map((l) => `${fmt(l * 100)}%`).join(' and ');
  return carriers.flatMap((c) =>
    present([given(share(c, 'mbPerSec'), share(c, 'callsPerSec'))((bulk, calls) => `${c} at ${lossNames} loss kept ${bulk} of its lossless subscription rate, and ${calls} of its rate of calls one after another.`)]),
  );
}

function loss(data: LossResults | undefined): string[] {
  if (!data) return [];
  return [
    '## Loss',
    '',
    `\`npm run bench:loss\` (root) puts the server in a network namespace made for the run, behind a veth`,
    "link whose packets are dropped at random both ways (iptables' `statistic` match), and runs each",
    `carrier from the host side: a ${data.totalMiB} MiB subscription, every byte checked against its pattern,`,
    `then ${fmt(data.calls)} unary calls one after another. The link itself has no delay; ratios are to the`,
    `WebSocket at the same loss. Measured ${when(data.date)}; the data: [\`results/loss.json\`](results/loss.json).`,
    '',
    ...lossTable(data),
    '',
    ...bullets([
      data.results.every((r) => r.intact) ? 'Every byte arrived on every carrier at every loss rate.' : 'Some bytes did NOT arrive intact: see the table.',
      ...keptShares(data),
    ]),
    '',
    'A lost packet of a lone request or answer on the WebSocket waits for TCP\'s retransmission',
    'timeout, 200 ms at least on Linux; QUIC recovers sooner.',
    '`test/integration/loss.test.ts` checks in CI that every byte arrives on every carrier at 5% loss.',
    '',
  ];
}

const RUNNING = [
  '## Running it',
  '',
  '- `npm run bench`: every scenario, 5 rounds (several minutes); writes `bench/results/latest.json`',
  '  and this page. `npx tsx bench/report.ts` makes this page again from the JSON without a run.',
  '- `npm run bench -- --quick`: a short subset (3 rounds, smaller sizes; the WebSocket, HTTP and the',
  '  peers). `--only unary` (scenario ids or groups: `bench/scenarios.ts`) runs some scenarios in full.',
  '  These write `bench/results/subset.json` and leave this page alone.',
  '- `npm run bench -- --only unary --baseline ../before/dist`: another build beside this one, each',
  '  callwire subject twice, every round interleaved; each row of this build carries its ratio to the',
  '  same row of the baseline (`… (baseline)`), and a last table lists them worst first. The baseline',
  '  is another checkout, built, with `node_modules`:',
  '',
  '  ```sh',
  '  git worktree add ../before <commit> && ln -s "$PWD/node_modules" ../before/node_modules',
  '  (cd ../before && npm run build) && npm run bench -- --only unary,streaming --baseline ../before/dist',
  '  ```',
  '',
  '- `npm run bench -- --repeat` (with the first run\'s options) right after a full run: the same run',
  '  again, written to `bench/results/repeat.json`; this page then says how far each median ratio moved.',
  '',
];

/**
 * The fleet's rows (docs/fleet.md), from a run of their own (`--only fleet`) while the
 * full run's results do not have them: each row's ratio is to the direct path measured in
 * the same rounds of that run.
 */
function fleet(results: Results, fleetData: Results | undefined): string[] {
  if (!fleetData || results.rows.some((r) => r.group === 'fleet')) return [];
  const { machine: m } = fleetData;
  return [
    '## Fleet',
    '',
    `Measured with \`${fleetData.command}\` on ${when(fleetData.date)} (${m.cores} × ${m.cpu}), ${fleetData.runs} interleaved rounds; ` +
      'every fleet row beside its direct row (the SDK to `callwire serve` on the engine) from the same rounds, the ratio fleet/direct. ' +
      `The gateway, the agent, the NATS node, the engine and the client share the machine's ${m.cores} cores. The data: [\`results/fleet.json\`](results/fleet.json).`,
    '',
    ...resultsTables(fleetData.rows),
  ];
}

function goals(results: Results): string[] {
  const table = goalsTable(results.rows);
  if (!table.length) return [];
  return [
    '## Goals',
    '',
    'Each goal is a ratio of medians taken round by round in this run; "before" is the same ratio for the',
    '`--baseline` build, measured in the same rounds. What bounds a goal that is missed: `PROFILE.md`.',
    '',
    ...table,
    '',
  ];
}

export function resultsPage(results: Results, source: string, lossData?: LossResults, fleetData?: Results, repeatData?: Results): string {
  const l = new Lookup(results.rows);
  return `${[...header(results, source), ...highlights(l), ...goals(results), ...repeatSection(results, repeatData), ...METHOD, ...RUNNING, '## Results', '', ...resultsTables(results.rows), ...notes(l), ...costGrowth(l), ...resumable(l), ...loss(lossData), ...fleet(results, fleetData)].join('\n').trimEnd()}\n`;
}
