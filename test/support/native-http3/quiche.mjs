// The parts of @fails-components/webtransport-transport-http3-quiche that the library's
// Http3Server calls (lib/server.js, createTransportInt): it holds the UDP port the way the
// native server does, and answers nothing, which is all a test of who listens needs.
import { createSocket } from 'node:dgram';

export function checkQuicheInit() {}

export class Http3WebTransportServer {
  constructor(args) {
    this.args = args;
  }

  startServer() {
    this.udp = createSocket(this.args.host?.includes(':') ? 'udp6' : 'udp4');
    this.udp.on('error', (error) => this.jsobj.onServerError(error));
    this.udp.bind(this.args.port, this.args.host, () => this.jsobj.onServerListening({ host: this.args.host, port: this.udp.address().port }));
  }

  addPath() {}

  setJSRequestHandler() {}
}

export class Http3WebTransportServerSocket {
  init() {}

  stopServer() {
    this.cobj?.udp?.close();
  }
}
