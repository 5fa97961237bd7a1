// AIPerf's --apply-chat-template (issue 38): the client counts a chat prompt as the tokenizer's own
// chat template renders it (generation prompt included) and shortens synthetic prompts by the
// template's cost, so what is sent has the asked length once templated; a fleet serving the same
// tokenizer counts its usage.prompt_tokens the same way, as vLLM does. Over loopback, with the BPE
// fixture test/fixtures/tiny-bpe-chatml (ChatML template in its tokenizer_config.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBench } from '../src/bench/index.js';
import { startFleet } from '../src/fleet/index.js';
import { loadChatTemplate, loadTokenizer, messageText, turnMessages, type ChatTemplate, type Tokenizer } from '../src/workload/index.js';
import { runCli, startCli } from './helpers.js';

const CHATML = fileURLToPath(new URL('./fixtures/tiny-bpe-chatml', import.meta.url));
const TINY = fileURLToPath(new URL('./fixtures/tiny-bpe', import.meta.url));
const ISL = 60;

async function setup(t: { after: (fn: () => Promise<void>) => void }): Promise<{ tok: Tokenizer; template: ChatTemplate; url: string }> {
  const tok = await loadTokenizer(CHATML);
  const template = await loadChatTemplate(tok);
  assert.ok(template !== null, 'the fixture has a chat template');
  const fleet = await startFleet({ workers: 1, port: 0, profile: 'small', model: 'm', tokenizer: { ...tok, chatTemplate: template } });
  t.after(() => fleet.close());
  return { tok, template, url: fleet.workers[0]!.url };
}

const bench = (url: string, tok: Tokenizer, applyChatTemplate: boolean, turns = 1) => runBench({
  url, model: 'm', endpointType: 'chat', streaming: true, concurrency: 2,
  inputTokensMean: ISL, inputTokensStddev: 0, outputTokensMean: 6, outputTokensStddev: 0, randomSeed: 3, tokenizer: tok, applyChatTemplate,
  ...(turns > 1 ? { conversationNum: 6, conversationTurnMean: turns, conversationTurnStddev: 0 } : { requestCount: 6 }),
});

test('ChatML probe: the template costs 6 tokens per request and 7 per message on the fixture', async () => {
  const tok = await loadTokenizer(CHATML);
  const template = (await loadChatTemplate(tok))!;
  // <|im_start|>user\n ... <|im_end|>\n around a message, <|im_start|>assistant\n after them.
  const m = [{ role: 'user', content: 'the tail inside its gate' }];
  assert.equal(template.render(m), '<|im_start|>user\nthe tail inside its gate<|im_end|>\n<|im_start|>assistant\n');
  assert.deepEqual(template.overheads, { perRequest: 6, perMessage: 7 });
  assert.equal(template.count(m), tok.count('the tail inside its gate') + 13);
  assert.equal(await loadChatTemplate(await loadTokenizer(TINY)), null, 'no tokenizer_config.json: no template');
});

test('--apply-chat-template: ISL in the records is the templated count, as asked, and the fleet\'s usage agrees', async (t) => {
  const { tok, template, url } = await setup(t);
  const r = await bench(url, tok, true);
  assert.equal(r.records.length, 6);
  for (const rec of r.records) {
    assert.equal(rec.outcome, 'ok');
    assert.equal(rec.inputTokens.client, ISL, 'what is sent has the asked length once templated');
    assert.equal(rec.inputTokens.server, ISL, 'usage.prompt_tokens counts the same template');
  }
  // The bare prompt was shortened by the template's cost (6 + 7), and its rendering is ISL tokens.
  for (const s of r.workload.sessions) {
    const msgs = turnMessages(s, 0, []);
    assert.equal(tok.count(msgs.map(messageText).join('\n')), ISL - 13);
    assert.equal(template.count(msgs.map((m) => ({ role: m.role, content: messageText(m) }))), ISL);
  }
});

test('without the flag the prompt is ISL bare tokens and counted bare, as before (the templating fleet counts 13 more)', async (t) => {
  const { tok, url } = await setup(t);
  const r = await bench(url, tok, false);
  assert.equal(r.records.length, 6);
  for (const rec of r.records) {
    assert.equal(rec.outcome, 'ok');
    assert.equal(rec.inputTokens.client, ISL);
    assert.equal(rec.inputTokens.server, ISL + 13);
  }
});

test('multi-turn: later turns are shortened by the per-message wrap only; each request\'s ISL is its templated history', async (t) => {
  const { tok, template, url } = await setup(t);
  const r = await bench(url, tok, true, 2);
  const ok = r.records.filter((x) => x.outcome === 'ok');
  assert.equal(ok.length, 12);
  for (const rec of ok) assert.equal(rec.inputTokens.client, rec.inputTokens.server, 'client and fleet count the same template');
  for (const s of r.workload.sessions) {
    const second = turnMessages(s, 1, ['x']).at(-1)!;
    assert.equal(tok.count(messageText(second)), ISL - template.overheads.perMessage);
  }
});

test('trace rows with messages are counted through the template too, and agree with the fleet', async (t) => {
  const { tok, template, url } = await setup(t);
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-chat-rows-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const history = [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'the tail inside its gate' }, { role: 'assistant', content: 'a gate' }, { role: 'user', content: 'and the tail' }];
  const file = join(dir, 'rows.jsonl');
  await writeFile(file, `${JSON.stringify({ messages: history, output_length: 3 })}\n`);
  const r = await runBench({ url, model: 'm', endpointType: 'chat', streaming: true, inputFile: file, requestCount: 1, tokenizer: tok, applyChatTemplate: true });
  const [rec] = r.records;
  assert.equal(rec!.outcome, 'ok');
  assert.equal(rec!.inputTokens.client, template.count(history));
  assert.equal(rec!.inputTokens.server, rec!.inputTokens.client);
  const chatml = history.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';
  assert.equal(rec!.inputTokens.client, tok.count(chatml), 'the ChatML rendering of the row, generation prompt included');
});

test('CLI: bench --apply-chat-template against fleet --tokenizer: profile_export ISL is the templated length; no template is exit 2', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-chat-template-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const fleet = await startCli(['fleet', '--workers', '1', '--port', '0', '--profile', 'small', '--model', 'm', '--tokenizer', CHATML], 'ready');
  t.after(() => fleet.stop());
  const url = fleet.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url: string }).url)[0]!;
  const out = join(dir, 'bench');
  const r = await runCli(['bench', '-m', 'm', '-u', url, '--streaming', '--concurrency', '2', '--request-count', '4', '--isl', '40', '--osl', '6',
    '--tokenizer', CHATML, '--apply-chat-template', '--artifact-dir', out], { timeoutMs: 90_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /disagree/);
  const lines = (await readFile(join(out, 'profile_export.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { metrics: { input_sequence_length: { value: number } } });
  assert.equal(lines.length, 4);
  for (const l of lines) assert.equal(l.metrics.input_sequence_length.value, 40);
  const refused = await runCli(['bench', '-m', 'm', '-u', url, '--request-count', '1', '--tokenizer', TINY, '--apply-chat-template', '--artifact-dir', join(dir, 'b2')], { timeoutMs: 60_000 });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /--apply-chat-template: tokenizer .* has no chat_template/);
  assert.doesNotMatch(refused.stderr, /\n\s+at /, 'no stack trace');
});
