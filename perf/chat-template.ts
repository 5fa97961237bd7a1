// What a chat template adds to counting a chat prompt (the fleet per chat request when its tokenizer
// has one; bench per request under --apply-chat-template): CPU per count of a system + user prompt
// through the template (render + encode) against the bare text's encode, alternated in one run.
//
//   node --import tsx perf/chat-template.ts [--tokenizer DIR] [--words 500] [--rounds 3]
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { loadChatTemplate, loadTokenizer } from '../src/workload/index.js';
import { numberArg, textArg } from './args.js';

const dir = textArg('--tokenizer', fileURLToPath(new URL('../test/fixtures/tiny-bpe-chatml', import.meta.url)));
const words = numberArg('--words', 500);
const rounds = numberArg('--rounds', 3);
const N = 2000;

const tok = await loadTokenizer(dir);
const template = await loadChatTemplate(tok);
if (template === null) throw new Error(`${dir}: no chat_template in its tokenizer_config.json`);
const text = Array.from({ length: words }, (_, i) => ['the', 'tail', 'inside', 'its', 'gate'][i % 5]).join(' ');
const messages = [{ role: 'system', content: 'be brief' }, { role: 'user', content: text }];
const cpuUs = (fn: () => void): number => {
  const a = process.cpuUsage();
  for (let i = 0; i < N; i++) fn();
  return process.cpuUsage(a).user / N;
};
console.log(`tokenizer ${dir}, ${words}-word prompt, ${N} counts per row, load ${loadavg()[0]!.toFixed(1)}`);
for (let r = 0; r < rounds; r++) {
  const bare = cpuUs(() => tok.count(messages.map((m) => m.content).join('\n')));
  const templated = cpuUs(() => template.count(messages));
  const render = cpuUs(() => template.render(messages));
  console.log(`round ${r + 1}: bare ${bare.toFixed(1)} us, templated ${templated.toFixed(1)} us (render ${render.toFixed(1)} us), templated/bare ${(templated / bare).toFixed(2)}x`);
}
