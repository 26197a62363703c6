import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';

/**
 * A real terminal: a tmux server of our own (its own socket, so nothing of the
 * user's is touched) running one window with a plain bash. Keys go in with
 * send-keys, the screen comes out with capture-pane, and resize-window changes the
 * size the programs inside see (SIGWINCH included).
 */
export class Tmux {
  private readonly socket = `callwire-test-${randomUUID().slice(0, 8)}`;

  constructor(cols: number, rows: number, env: Record<string, string> = {}) {
    const exports = Object.entries(env).map(([k, v]) => `export ${k}='${v}';`).join(' ');
    this.tmux('new-session', '-d', '-s', 'main', '-x', String(cols), '-y', String(rows), `${exports} exec bash --norc --noprofile`);
    // Our own window size, not the size of the largest client (there is none).
    this.tmux('set-option', '-t', 'main', 'window-size', 'manual');
  }

  /** Types `text`, then Enter. */
  type(text: string): void {
    this.tmux('send-keys', '-t', 'main', '-l', text);
    this.tmux('send-keys', '-t', 'main', 'Enter');
  }

  keys(...keys: string[]): void {
    this.tmux('send-keys', '-t', 'main', ...keys);
  }

  resize(cols: number, rows: number): void {
    this.tmux('resize-window', '-t', 'main', '-x', String(cols), '-y', String(rows));
  }

  /** The visible screen and its scrollback, as text. */
  screen(): string {
    return this.tmux('capture-pane', '-t', 'main', '-p', '-S', '-200');
  }

  /** Waits until the screen matches; returns the match. */
  async waitFor(pattern: RegExp, timeoutMs = 10_000): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = pattern.exec(this.screen());
      if (m) return m;
      if (Date.now() > deadline) throw new Error(`no ${pattern} on the terminal within ${timeoutMs} ms; it shows:\n${this.screen()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  kill(): void {
    try {
      this.tmux('kill-server');
    } catch {
      // already gone
    }
  }

  private tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, ...args], { encoding: 'utf8' });
  }
}
