import { CallerInputError } from '../../outcome/index.js';

const UNITS = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB'];

/** A size as `docker cp` prints it (go-units' HumanSizeWithPrecision(n, 3)): decimal units, 3 significant digits, `1.05MB`. */
export function humanSize(bytes: number): string {
  let size = bytes;
  let unit = 0;
  while (size >= 1000 && unit < UNITS.length - 1) {
    size /= 1000;
    unit++;
  }
  return `${String(Number(size.toPrecision(3)))}${UNITS[unit]!}`;
}

const BINARY: Record<string, number> = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 };

/** `--max-bytes`: a whole number of bytes, or with a binary unit: `512m`, `64GiB`, `1T`. */
export function parseByteSize(text: string, flag: string): number {
  const m = /^(\d+)\s*([kmgt]?)(?:i?b)?$/i.exec(text.trim());
  const bytes = m ? Number(m[1]) * BINARY[m[2]!.toLowerCase()]! : NaN;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new CallerInputError(`${flag} must be a size such as 1073741824, 512MiB or 64GiB, not "${text}"`);
  return bytes;
}
