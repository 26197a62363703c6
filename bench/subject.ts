/**
 * A subject of the bench: one client path to one server (callwire over one transport, a
 * peer, a ceiling, a CLI process). A scenario runs every subject that can do what it
 * measures, interleaved round by round, and divides each subject's figures by its peers'.
 */
export interface Subject {
  /** The name its rows carry; also the name other subjects' `peers` use. */
  readonly name: string;
  /** The subjects its rows are compared with, where they ran in the same rounds. */
  readonly peers: readonly string[];
  /** One unary call: `bench/echo` of a short text, or the peer's equivalent. */
  readonly echo?: () => Promise<unknown>;
  /** A server stream of `items` items of `itemBytes` each; resolves with the bytes received. */
  readonly stream?: (items: number, itemBytes: number) => Promise<number>;
  /**
   * Runs `argv` in `container` as docker exec does; resolves with the bytes of its
   * stdout, or undefined when it cannot see them (a CLI process writing to /dev/null).
   */
  readonly exec?: (container: string, argv: readonly string[]) => Promise<number | undefined>;
  /** A shell command line that runs `command` on a tty in `container` (for the keystroke scenario). */
  readonly ttyCommand?: (container: string, command: string) => string;
  /** The processes (name → pid) whose own CPU an exec's rows report, beside the whole machine's. */
  readonly processes?: Readonly<Record<string, number>>;
  close(): Promise<void>;
}
