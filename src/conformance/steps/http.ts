import { sendHttp } from '../http-step.js';
import { mismatch } from '../match.js';
import { ScenarioFailure } from '../verdict.js';
import type { Handler } from './handler.js';
import { checkSideCall } from './side-call.js';

/** `http`: one call over plain HTTP (§5.6), its status, headers, records and result record matched. */
export const http: Handler<'http'> = async (step, run) => {
  const { token, saveAs, ...request } = step.http;
  const { options } = run;
  const headers = { ...request.headers, ...(token && options.token ? { authorization: `Bearer ${options.token}` } : {}) };
  const check = request.slowReader?.sideCall;
  const answer = await sendHttp(options.url, options.codec, { ...request, headers }, step.timeoutMs ?? 30_000, check && (() => checkSideCall(run, check)));
  const where = `${request.method} ${request.path}`;
  if (saveAs !== undefined) {
    const values = answer.closedEarly ? answer.records.length : answer.records.length - 1;
    run.resumes.set(saveAs, { token: answer.headers['x-callwire-resume-token'] ?? '', values, lastEventId: answer.lastEventId ?? '' });
  }
  if (answer.status !== step.expectStatus) throw new ScenarioFailure(`${where}: status ${answer.status}, expected ${step.expectStatus} (body: ${JSON.stringify(answer.records).slice(0, 300)})`);
  const headerMismatch = step.expectHeaders === undefined ? undefined : mismatch(step.expectHeaders, answer.headers);
  if (headerMismatch) throw new ScenarioFailure(`${where}: headers: ${headerMismatch}`);
  const records = step.expectResultRecord === undefined || answer.closedEarly ? answer.records : answer.records.slice(0, -1);
  if (step.expectResultRecord !== undefined) {
    if (answer.closedEarly) throw new ScenarioFailure(`${where}: closed before the result record`);
    const m = mismatch(step.expectResultRecord, answer.records.at(-1));
    if (m) throw new ScenarioFailure(`${where}: result record: ${m}`);
  }
  if (step.expectRecords !== undefined) {
    const m = mismatch(step.expectRecords, records);
    if (m) throw new ScenarioFailure(`${where}: records: ${m}`);
  }
};
