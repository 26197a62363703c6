/**
 * The local TTY for `exec -t` (docs/cli.md "Interactive exec"): raw mode while the
 * remote command owns it, its size now and on every SIGWINCH, and the mode given
 * back on every way out. `restore` runs from the command's own cleanup, as soon as
 * the session ends (before an error is printed, before the connection has closed),
 * and from the process's `exit` as a backstop; Node's own exit also resets a
 * terminal it put in raw mode. A SIGKILL is the one path no process can handle
 * (`stty sane` then repairs the terminal).
 */
export interface LocalTty {
  /** The size to start with: the local terminal's, or 80×24 when output is not a terminal or has no size. */
  readonly size: { cols: number; rows: number };
  /** Calls `onResize` with each new size until restored. */
  watchResize(onResize: (cols: number, rows: number) => void): void;
  restore(): void;
}

export function localTty(raw: boolean): LocalTty {
  const stdin = process.stdin;
  const stdout = process.stdout;
  // A terminal that reports no size (a fresh pty under `script` says 0×0) gets the default too.
  const sizeOf = (): { cols: number; rows: number } =>
    stdout.isTTY && stdout.columns > 0 && stdout.rows > 0 ? { cols: stdout.columns, rows: stdout.rows } : { cols: 80, rows: 24 };
  let restored = false;
  let onWinch: (() => void) | undefined;
  // Keystrokes go to the remote terminal as bytes: Ctrl-C there, not here.
  if (raw && stdin.isTTY) stdin.setRawMode(true);
  const restore = (): void => {
    if (restored) return;
    restored = true;
    if (onWinch) stdout.off('resize', onWinch);
    if (raw && stdin.isTTY) stdin.setRawMode(false);
    process.off('exit', restore);
  };
  process.on('exit', restore);
  return {
    size: sizeOf(),
    watchResize(onResize) {
      // Node turns SIGWINCH into stdout's 'resize', after it has read the new size.
      if (!stdout.isTTY) return;
      onWinch = (): void => {
        const { cols, rows } = sizeOf();
        onResize(cols, rows);
      };
      stdout.on('resize', onWinch);
    },
    restore,
  };
}
