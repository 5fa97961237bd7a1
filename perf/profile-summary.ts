// Self time by function from a V8 CPU profile, largest first: where a perf/ script spends its time.
// Counts samples (one per sampling interval), not the intervals' lengths, so a process that the
// machine's other load kept waiting is not charged to whatever ran next.
// Run: node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx perf/simulate.ts --fleet
//      node --import tsx perf/profile-summary.ts /tmp/prof [--top 40]
// (a directory: the main thread's .cpuprofile, else its largest)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const at = args.indexOf('--top');
const top = at >= 0 ? Number(args[at + 1]) : 40;
const target = args.find((a, i) => !a.startsWith('--') && (at < 0 || i !== at + 1));
if (target === undefined || !(top > 0)) {
  console.error('usage: perf/profile-summary.ts <file.cpuprofile | directory> [--top N]');
  process.exit(2);
}
/** The directory's main-thread profile, else its largest: Node names a profile CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile, the main thread's id is 0, and the loader thread's can be the larger when the script itself runs briefly. */
function profileIn(dir: string): string | undefined {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f));
  return files.find((f) => /\.0\.\d+\.cpuprofile$/.test(f)) ?? files.sort((a, b) => statSync(b).size - statSync(a).size)[0];
}
const file = statSync(target).isDirectory() ? profileIn(target) : target;
if (file === undefined) {
  console.error(`no .cpuprofile in ${target}`);
  process.exit(2);
}

const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
const hits = new Map<number, number>();
for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
const byFunction = new Map<string, number>();
for (const n of profile.nodes) {
  const count = hits.get(n.id) ?? 0;
  if (count === 0) continue;
  const { functionName, url, lineNumber } = n.callFrame;
  const where = url === '' ? '' : ` ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
  const key = `${functionName || '(anonymous)'}${where}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + count);
}
const total = profile.samples.length;
const msPerSample = (profile.endTime - profile.startTime) / 1000 / Math.max(1, total);
console.log(`${file}: ${total} samples, ~${((total * msPerSample) / 1000).toFixed(1)} s`);
for (const [key, count] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`${((100 * count) / total).toFixed(1).padStart(5)}%  ${String(count).padStart(7)}  ${key}`);
}
