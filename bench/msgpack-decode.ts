/**
 * Decodes a stream of exec-like frames with the project's msgpack codec and prints
 * frames/s. Run twice by bench/scenarios/codec.ts, with and without msgpackr's native extension
 * (MSGPACKR_NATIVE_ACCELERATION_DISABLED), which npm 11 installs only when its
 * install script is approved (package.json "allowScripts").
 */
import { isNativeAccelerationEnabled } from 'msgpackr';
import { protocol } from './built.js';

const { codecs, envelopes } = protocol;

const native = isNativeAccelerationEnabled;
const text = 'a line of output from a command, with some words in it\n'.repeat(4);
const frames = Array.from({ length: 1000 }, (_, i) => codecs.msgpack.encode(envelopes.responded(`call-${i % 16}`, { stream: 'stdout', text: `${i} ${text}` })));
const run = (ms: number): number => {
  let n = 0;
  const until = performance.now() + ms;
  while (performance.now() < until) {
    for (const f of frames) {
      codecs.msgpack.decode(f);
      n++;
    }
  }
  return n / (ms / 1000);
};
run(300); // warm up
console.log(JSON.stringify({ native, framesPerSecond: run(1500) }));
