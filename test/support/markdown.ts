/**
 * What the docs tests need of a Markdown file: its fenced code blocks, its links, and the
 * anchors its headings make, the way GitHub renders them.
 */

export interface FencedBlock {
  /** The info string's first word (`ts`, `console`, `sh`, …); empty when there is none. */
  readonly lang: string;
  readonly body: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
}

export interface Link {
  readonly target: string;
  readonly line: number;
}

const FENCE = /^(`{3,}|~{3,})\s*([^\s`]*)/;

/** Every fenced block, in order. */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !lines[j]!.startsWith(fence)) body.push(lines[j++]!);
    blocks.push({ lang: open[2] ?? '', body: body.join('\n'), line: i + 1 });
    i = j;
  }
  return blocks;
}

/** The lines outside fenced blocks, with inline code blanked, so links shown as code are not followed. */
function proseLines(markdown: string): string[] {
  const lines = markdown.split('\n');
  let fence: string | undefined;
  return lines.map((line) => {
    const open = FENCE.exec(line);
    if (fence) {
      if (line.startsWith(fence)) fence = undefined;
      return '';
    }
    if (open) {
      fence = open[1]!;
      return '';
    }
    return line.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length));
  });
}

/** Every inline link and image target (`[text](target)`, `![alt](target)`). */
export function links(markdown: string): Link[] {
  const found: Link[] = [];
  // Link text may itself be inline code, which proseLines blanks; the target is what matters.
  proseLines(markdown).forEach((line, index) => {
    for (const match of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push({ target: match[1]!, line: index + 1 });
  });
  return found;
}

/** The anchors GitHub gives the headings: lowercased, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const lines = markdown.split('\n');
  let fence: string | undefined;
  for (const line of lines) {
    const open = FENCE.exec(line);
    if (fence) {
      if (line.startsWith(fence)) fence = undefined;
      continue;
    }
    if (open) {
      fence = open[1]!;
      continue;
    }
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}
