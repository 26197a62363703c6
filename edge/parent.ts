// Both edges live only as long as the Node process that started them. Their standard
// input is a pipe whose other end only that process holds: the kernel closes it when
// the process ends, however it ends (SIGKILL and a crash included), and our read then
// ends. An edge left running would keep its UDP port and the private key in its
// directory, and the next server could not listen there.

/**
 * Waits for the end of standard input, then removes `dir` (the edge's private
 * directory: its config, the key, the bridge's socket) and exits.
 */
export function endWithParent(dir: string): void {
  void (async () => {
    try {
      for await (const _ of Deno.stdin.readable) {
        // nothing: the parent never writes
      }
    } catch {
      // a broken pipe is the same news
    }
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch {
      // already gone: the parent removed it on its way out
    }
    Deno.exit(0);
  })();
}
