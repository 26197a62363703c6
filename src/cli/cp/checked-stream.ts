import { createHash } from 'node:crypto';
import { RpcError } from '../../client-node/index.js';
import type { ArchiveTerminalFrame } from '../../contracts/index.js';
import { ArchiveRefused } from './refusals.js';

/**
 * The tar bytes of one copy, counted and hashed as they go, checked against the terminal
 * frame at the end (spec §12, "Archives"): a copy short of a byte, or with one changed,
 * never ends as a success. `maxBytes` bounds what a hostile sender can make us take.
 */
export class CheckedStream {
  private readonly hash = createHash('sha256');
  bytes = 0;

  constructor(private readonly maxBytes: number) {}

  add(chunk: Uint8Array): void {
    this.bytes += chunk.byteLength;
    if (this.bytes > this.maxBytes) throw new ArchiveRefused(`refused the archive: it is larger than --max-bytes (${this.maxBytes} bytes)`);
    this.hash.update(chunk);
  }

  /** Throws unless `terminal` names exactly the bytes counted. */
  verify(terminal: ArchiveTerminalFrame | undefined): void {
    if (terminal === undefined) throw new RpcError('UNAVAILABLE', 'the copy ended without its terminal frame: it is incomplete');
    const sha256 = this.hash.digest('hex');
    if (terminal.bytes !== this.bytes || terminal.sha256 !== sha256) {
      throw new RpcError('INTERNAL', `the copy does not match its terminal frame: ${this.bytes} bytes with sha256 ${sha256} here, ${terminal.bytes} bytes with sha256 ${terminal.sha256} there`);
    }
  }
}
