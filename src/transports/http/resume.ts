import type { IncomingHttpHeaders } from 'node:http';
import { CallerInputError } from '../../outcome/index.js';

/** Asks that a stream outlive its connection for this many milliseconds (HTTP-6); the answer repeats the grace granted. */
export const RESUME_MS_HEADER = 'X-Callwire-Resume-Ms';
/** The answer's resume token (HTTP-6). */
export const RESUME_TOKEN_HEADER = 'X-Callwire-Resume-Token';
/** A resume by headers (HTTP-7): the token, and how many values the caller has received (or `end`). */
export const RESUME_HEADER = 'X-Callwire-Resume';
export const RESUME_AFTER_HEADER = 'X-Callwire-Resume-After';
/** How an SSE reader reconnects: the id of the last event it received (HTTP-7). */
export const LAST_EVENT_ID_HEADER = 'Last-Event-ID';

/** Where a resuming caller is: it has received every value up to `after`, or, with `end`, everything (HTTP-9). */
export interface ResumePosition {
  readonly token: string;
  readonly after: number | 'end';
}

// A token is base64url (§4.9), or several joined by dots: a gateway's names its host's call
// (`fw1.<host>.…`, docs/fleet.md). A position is a count of values, or `end`.
const TOKEN = /^(?=.{1,512}$)[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;
const AFTER = /^(?:0|[1-9]\d{0,14}|end)$/;

/** The `id:` of an SSE event: the token and the position a resume from there asks for. */
export function eventId(token: string, after: number | 'end'): string {
  return `${token}.${after}`;
}

/** `X-Callwire-Resume-Ms`: a whole number of milliseconds above 0, or absent. */
export function parseResumeMs(headers: IncomingHttpHeaders): number | undefined | CallerInputError {
  const text = one(headers[RESUME_MS_HEADER.toLowerCase()]);
  if (text === undefined) return undefined;
  const ms = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(ms) || ms <= 0) return new CallerInputError(`${RESUME_MS_HEADER} must be a whole number of milliseconds above 0, not "${text}"`);
  return ms;
}

/**
 * The position a request resumes from: `Last-Event-ID: <token>.<n>` or
 * `X-Callwire-Resume: <token>` with `X-Callwire-Resume-After: <n>`; absent when it
 * starts a call. Anything else that names a resume is the caller's mistake.
 */
export function parseResumePosition(headers: IncomingHttpHeaders): ResumePosition | undefined | CallerInputError {
  const lastEventId = one(headers[LAST_EVENT_ID_HEADER.toLowerCase()]);
  const token = one(headers[RESUME_HEADER.toLowerCase()]);
  const after = one(headers[RESUME_AFTER_HEADER.toLowerCase()]);
  if (lastEventId === undefined && token === undefined && after === undefined) return undefined;
  if (lastEventId !== undefined && (token !== undefined || after !== undefined)) {
    return new CallerInputError(`resume with ${LAST_EVENT_ID_HEADER} or with ${RESUME_HEADER} and ${RESUME_AFTER_HEADER}, not both`);
  }
  if (lastEventId !== undefined) {
    const dot = lastEventId.lastIndexOf('.');
    const problem = `${LAST_EVENT_ID_HEADER} must be <token>.<values received> or <token>.end, as the events' ids are`;
    return dot < 0 ? new CallerInputError(problem) : position(lastEventId.slice(0, dot), lastEventId.slice(dot + 1), problem);
  }
  return position(token ?? '', after ?? '', `${RESUME_HEADER} must be a resume token and ${RESUME_AFTER_HEADER} the number of values received, or end`);
}

function position(token: string, after: string, problem: string): ResumePosition | CallerInputError {
  if (!TOKEN.test(token) || !AFTER.test(after)) return new CallerInputError(problem);
  return { token, after: after === 'end' ? 'end' : Number(after) };
}

function one(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header;
}
