import { z } from 'zod';

/**
 * The names a caller may give the Docker engine for its objects (spec/PROTOCOL.md §12,
 * DOCKER-1): each reference goes into an engine API path, so anything outside the
 * engine's own grammar is refused as INVALID_INPUT before the engine is asked.
 */

/**
 * A container name as the engine accepts it on create (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`),
 * without the leading `/` that inspect's `.Name` shows: the engine cleans a path
 * segment that starts with `/` and answers with a redirect, so that spelling cannot
 * reach it through its API.
 */
const containerNamePattern = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** The name a caller gives a container it creates. */
export const containerName = z.string().regex(containerNamePattern, 'must be a container name: [a-zA-Z0-9][a-zA-Z0-9_.-]* (no leading /)');

/**
 * A container a caller names: its id, an unambiguous prefix of its id, or its name.
 * Hex ids and their prefixes are themselves of the name's grammar.
 */
export const containerReference = z
  .string()
  .regex(containerNamePattern, 'must be a container id, id prefix, or name: [a-zA-Z0-9][a-zA-Z0-9_.-]* (no leading /)')
  .describe("the container's id, an unambiguous id prefix, or its name (without the leading /)");

/*
 * The image reference grammar of the engine (github.com/distribution/reference):
 *   reference := name [":" tag] ["@" digest]
 *   name      := [domain "/"] path-component ["/" path-component]*
 *   domain    := (domain-name | "[" ipv6 "]") [":" port]
 * An image id (`sha256:<hex>`, or a hex prefix) is of this grammar too: name
 * `sha256` with the hex as its tag, or a lone path component.
 */
const alphanumeric = '[a-z0-9]+';
const separator = '(?:[._]|__|[-]+)';
const pathComponent = `${alphanumeric}(?:${separator}${alphanumeric})*`;
const domainComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const domainName = `${domainComponent}(?:\\.${domainComponent})*`;
const domain = `(?:${domainName}|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`;
const imageName = `(?:${domain}/)?${pathComponent}(?:/${pathComponent})*`;
const tag = '[\\w][\\w.-]{0,127}';
const digest = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const imageReferencePattern = new RegExp(`^(${imageName})(?::${tag})?(?:@${digest})?$`);

/** The engine's limit on a reference's name part (before any tag or digest). */
const NAME_MAX_CHARS = 255;
/** Name, tag, and the longest digest (sha512) with room to spare: nothing longer is matched at all. */
const REFERENCE_MAX_CHARS = 512;

/** An image a caller names: `[registry[:port]/]path[:tag][@digest]`, or an image id. */
export const imageReference = z
  .string()
  .max(REFERENCE_MAX_CHARS, { abort: true })
  .regex(imageReferencePattern, { message: 'must be an image reference: [registry[:port]/]name[:tag][@digest] (lowercase name), or an image id', abort: true })
  .refine((reference) => (imageReferencePattern.exec(reference)?.[1]?.length ?? 0) <= NAME_MAX_CHARS, `an image name may have at most ${NAME_MAX_CHARS} characters`)
  .describe('an image reference, [registry[:port]/]name[:tag][@digest], or an image id');
