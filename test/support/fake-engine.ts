import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * An engine on a unix socket that answers `/_ping` and `/version` (what a server
 * asks at start) and hands every other request to `answer`. It records each path
 * as it arrived on the wire, still encoded.
 */
export class FakeEngine {
  private server: Server | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'callwire-fake-engine-'));
  readonly socketPath = join(this.dir, 'docker.sock');
  readonly paths: string[] = [];

  constructor(private readonly answer: (request: IncomingMessage, response: ServerResponse) => void) {}

  get dockerHost(): string {
    return `unix://${this.socketPath}`;
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      if (request.url === '/_ping') return void response.end('OK');
      if (request.url === '/version') return void response.setHeader('content-type', 'application/json').end(JSON.stringify({ Version: 'fake', ApiVersion: '1.47' }));
      this.paths.push(request.url ?? '');
      this.answer(request, response);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.socketPath, resolve));
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
