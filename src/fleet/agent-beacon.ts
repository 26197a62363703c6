import type { Readable } from 'node:stream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from '../dispatcher/index.js';
import { engineList, engineStream, type DockerEngine } from '../operations/index.js';
import { BEAT_MS, helloSchema, type Beat, type RoutedContainer } from './beat.js';
import type { AgentSelf } from './host-claim.js';
import { guarded } from './nats-settings.js';
import { beatOf, HELLO } from './subjects.js';
import { PartPacer, tableMessages, tableOf, type EngineRow } from './table-announce.js';

// Events that change which containers exist, what they are called, or whether they run (the table's list rows).
const TABLE_EVENTS = new Set(['create', 'destroy', 'rename', 'start', 'die', 'pause', 'unpause']);

/**
 * Keeps the agent's containers routable (docs/fleet.md): follows the engine's events,
 * and beats every second on `callwire.host.<host>.beat`, with the container table
 * whenever it changed or a gateway asked for it.
 */
export class AgentBeacon {
  private version = 0;
  /** The engine's containers as last listed; undefined while it does not answer the list (not listed is not empty). */
  private containers: RoutedContainer[] | undefined;
  private engineUp = false;
  private events: Readable | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private hello: Subscription | undefined;
  private refreshing: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private tooLargeWarned = false;
  private readonly pacer: PartPacer;
  /** The version of the table whose parts the pacer is sending. */
  private sendingVersion = -1;

  constructor(
    private readonly nc: NatsConnection,
    private readonly host: string,
    private readonly engine: DockerEngine,
    private readonly logger: Logger,
    private readonly self: AgentSelf,
  ) {
    this.pacer = new PartPacer((message) => this.publish(message));
  }

  async start(): Promise<void> {
    this.hello = this.nc.subscribe(HELLO, {
      callback: guarded(this.logger, 'the gateways\' hellos', (msg) => {
        let asked: string[] | undefined;
        try {
          asked = helloSchema.parse(msg.json()).hosts;
        } catch {
          return;
        }
        if (!asked || asked.includes(this.host)) this.beat(true);
      }),
    });
    this.follow();
    await this.refresh();
    this.timer = setInterval(() => this.beat(false), BEAT_MS);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.hello?.unsubscribe();
    this.events?.destroy();
    this.pacer.stop();
  }

  private beat(withTable: boolean): void {
    if (this.nc.isClosed()) return;
    const beat: Beat = { startedAt: this.self.startedAt, version: this.version, engine: this.engineUp ? 'up' : 'down', pid: this.self.pid, hostname: this.self.hostname };
    // An ask for the table whose parts are going out now is answered by them.
    if (!withTable || (this.pacer.busy && this.sendingVersion === this.version)) return this.publish(JSON.stringify(beat));
    const messages = this.containers && tableMessages(beat, this.containers, this.nc.info?.max_payload ?? 1024 * 1024);
    if (this.containers && !messages && !this.tooLargeWarned) {
      // More than a table may hold: HOST/NAME still reaches them all; a bare name or id does not.
      this.logger.warn('the container table is larger than a table may be (docs/fleet.md "Limits"): callers must name containers as HOST/NAME', { containers: this.containers.length });
      this.tooLargeWarned = true;
    }
    this.sendingVersion = this.version;
    // A table not listed, or not sendable, is said to be withheld, never sent empty: an empty table frees this host's names for another host to take.
    this.pacer.send(messages || [JSON.stringify({ ...beat, withheld: this.containers ? 'too-large' : 'engine-down' })]);
  }

  private publish(message: string): void {
    if (this.nc.isClosed()) return;
    try {
      this.nc.publish(beatOf(this.host), message);
    } catch (error) {
      this.logger.warn('could not publish a heartbeat', { error: (error as Error).message });
    }
  }

  /** Lists the engine's containers again (one list at a time; a change during it lists once more). */
  private refresh(): Promise<void> {
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.again = false;
        let listed: RoutedContainer[] | undefined;
        try {
          // Row by row, keeping what the table holds: 10,000 containers of big labels are never one buffer (spec §12, DOCKER-2).
          listed = tableOf(await engineList(this.engine, { path: '/containers/json', query: { all: true } }, 'the container list', (c: EngineRow): EngineRow => ({
            Id: c.Id,
            ...(c.Names ? { Names: c.Names } : {}),
            ...(c.Image === undefined ? {} : { Image: c.Image }),
            ...(c.State === undefined ? {} : { State: c.State }),
            ...(c.Status === undefined ? {} : { Status: c.Status }),
            ...(c.Created === undefined ? {} : { Created: c.Created }),
            ...(c.Labels ? { Labels: c.Labels } : {}),
          })));
          this.engineUp = true;
        } catch (error) {
          this.engineUp = false;
          this.logger.warn('cannot list the engine\'s containers', { error: (error as Error).message });
        }
        // A version for each table listed, and one for a table known until now that no longer is.
        if (listed || this.containers) this.version++;
        this.containers = listed;
        this.beat(true);
      } while (this.again && !this.stopped);
    })().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** The engine's container events; when the stream breaks (the engine restarted), follows it again. */
  private follow(): void {
    if (this.stopped) return;
    let retried = false;
    const retry = (): void => {
      if (retried) return;
      retried = true;
      this.events = undefined;
      if (this.stopped) return;
      this.engineUp = false;
      setTimeout(() => {
        this.follow();
        void this.refresh();
      }, BEAT_MS).unref();
    };
    // No idle timeout (DOCKER-2): docker-modem's 60 s broke a quiet event stream every minute, and the host read as down.
    engineStream(this.engine, { path: '/events', query: { filters: JSON.stringify({ type: ['container'] }) } }).then((stream) => {
      const events = stream as Readable;
      if (this.stopped) return void events.destroy();
      this.events = events;
      let pending = '';
      events.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        let newline: number;
        while ((newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          try {
            const action = String((JSON.parse(line) as { Action?: unknown }).Action ?? '');
            if (TABLE_EVENTS.has(action.split(':')[0] ?? '')) void this.refresh();
          } catch {
            // a line the engine did not finish: the next refresh sees the truth anyway
          }
        }
        if (pending.length > 1 << 20) pending = '';
      });
      events.once('error', retry);
      events.once('end', retry);
    }, retry);
  }
}
