import type { ScenarioRun } from '../scenario-run.js';
import type { StepKind } from '../scenario.js';
import { collect } from './collect.js';
import { connect, disconnect, expectClose, expectEnd, expectPing, finish, pause, reset } from './connection.js';
import { wait, repeat } from './control.js';
import { drain, expect, expectNone, expectUnordered } from './expect.js';
import type { Handlers, StepOf } from './handler.js';
import { http } from './http.js';
import { handshake, silentSocket } from './probes.js';
import { send, sendFilled, sendHex, sendPrefix, sendText } from './send.js';
import { sideCall } from './side-call.js';

export { DEFAULT_TIMEOUT_MS } from './handler.js';

/** The runner's one entry per step kind (scenario.ts); spec/conformance/README.md says what each checks. */
const handlers: Handlers = {
  send,
  sendHex,
  sendText,
  sendPrefix,
  sendFilled,
  expect,
  expectUnordered,
  expectNone,
  drain,
  collect,
  sideCall,
  http,
  connect,
  disconnect,
  pause,
  finish,
  reset,
  expectClose,
  expectPing,
  expectEnd,
  handshake,
  silentSocket,
  wait,
  repeat,
};

export async function runStep<K extends StepKind>(step: StepOf<K>, run: ScenarioRun, index: number | undefined): Promise<void> {
  await handlers[step.kind](step, run, index);
}
