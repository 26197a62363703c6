/** An archive or a copy refused as hostile, out of order or out of bounds: nothing of it stays (exit 125). */
export class ArchiveRefused extends Error {
  override readonly name = 'ArchiveRefused';
}
