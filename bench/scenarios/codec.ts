/** msgpack decode of exec-like frames with and without msgpackr's native extension (bench/msgpack-decode.ts). */
import { spawnSync } from 'node:child_process';
import type { Bench } from '../scenario.js';

interface DecodeRate {
  native: boolean;
  framesPerSecond: number;
}

const decodeRate = (disabled: boolean): DecodeRate => {
  const out = spawnSync(process.execPath, ['--import', 'tsx', 'bench/msgpack-decode.ts'], {
    encoding: 'utf8',
    env: { ...process.env, ...(disabled ? { MSGPACKR_NATIVE_ACCELERATION_DISABLED: 'true' } : {}) },
  });
  return JSON.parse(out.stdout.trim().split('\n').pop()!) as DecodeRate;
};

export async function codec(bench: Bench): Promise<void> {
  // Interleaved, so a noisy minute hits both.
  const withExtension: number[] = [];
  const without: number[] = [];
  let loaded = false;
  for (let i = 0; i < bench.options.runs; i++) {
    const a = decodeRate(false);
    loaded = a.native;
    withExtension.push(a.framesPerSecond);
    without.push(decodeRate(true).framesPerSecond);
  }
  const metric = 'msgpack decode, 250 B exec frames';
  const withoutName = 'without the extension';
  bench.record.runs({ group: 'codec', metric, subject: `with msgpackr-extract${loaded ? '' : ' (not loaded!)'}`, unit: 'frames/s' }, withExtension, { [withoutName]: without });
  bench.record.runs({ group: 'codec', metric, subject: withoutName, unit: 'frames/s' }, without);
}
