#!/usr/bin/env node
// Placeholder until the server lands (issue 4): says what `serve` will do.
const [command = 'serve'] = process.argv.slice(2);
if (command === 'serve') {
  console.log('callwire: the server is not built yet; it will serve WebSocket and WebTransport on loopback.');
} else {
  console.error(`Error: unknown command '${command}'`);
  process.exitCode = 2;
}
