import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, exec } from '../src/client/index.js';
const [url, servePid] = process.argv.slice(2);
const ticks = (pid: number): number => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return Number(f[11]) + Number(f[12]); };
const c = await connect(url!);
const id = execFileSync('docker', ['run', '-d', '--network', 'none', 'callwire-test:busybox', 'sleep', '1000'], { encoding: 'utf8' }).trim();
const dockerd = Number(execFileSync('pgrep', ['-f', 'dockerd.*callwire-docker'], { encoding: 'utf8' }).split('\n')[0]);
for (let r = 0; r < 3; r++) {
  const b = { s: ticks(Number(servePid)), c: ticks(process.pid), d: ticks(dockerd) };
  let bytes = 0;
  const t = performance.now();
  const h = exec(c, id, ['dd', 'if=/dev/zero', 'bs=1M', 'count=512'], { encoding: 'binary' });
  h.output.subscribe((f) => { if ('data' in f) bytes += f.data.byteLength; });
  await h.result;
  const s = (performance.now() - t) / 1000;
  const per = (x: number) => ((x * 10) / s / 10).toFixed(0);
  console.log(`${(bytes / 1e6 / s).toFixed(0)} MB/s over ${s.toFixed(2)} s; CPU %: server ${per(ticks(Number(servePid)) - b.s)}, client ${per(ticks(process.pid) - b.c)}, dockerd ${per(ticks(dockerd) - b.d)}`);
}
execFileSync('docker', ['rm', '-f', id]);
await c.close(); process.exit(0);
