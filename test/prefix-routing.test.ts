// Prefix affinity live: the router hashes the prompt text it relays by the fleet's rule, so the
// blocks it learns are the blocks the workers' prefix caches hold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFleet } from '../src/fleet/index.js';
import { startRouter } from '../src/router/index.js';
import type { PolicyName } from '../src/routing/index.js';
import { buildDataset } from '../src/workload/index.js';

const GROUPS = 4;
const ROUNDS = 5;
const SYSTEM_WORDS = 320; // 20 full blocks of 16

/** `n` seeded random words (the seed workload's generator). */
function words(n: number, seed: number): string {
  return buildDataset({ seed, entries: 1, inputTokensMean: n, inputTokensStddev: 0, outputTokensMean: 1, outputTokensStddev: 0 })[0]!.prompt;
}

const counter = (text: string, name: string): number => {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) sum += Number(m[1]);
  return sum;
};

async function run(policy: PolicyName): Promise<{ workersPerGroup: number[]; hits: number; queries: number }> {
  const fleet = await startFleet({ workers: 4, port: 0, profile: 'small' });
  try {
    const router = await startRouter({ backends: fleet.workers.map((w) => w.url), port: 0, policy, seed: 3 });
    try {
      const byGroup = Array.from({ length: GROUPS }, () => new Set<string>());
      for (let round = 0; round < ROUNDS; round++) {
        for (let g = 0; g < GROUPS; g++) {
          const res = await fetch(`${router.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              model: 'Qwen/Qwen3-8B',
              max_tokens: 2,
              messages: [{ role: 'system', content: words(SYSTEM_WORDS, g) }, { role: 'user', content: words(12, 1000 + round * GROUPS + g) }],
            }),
          });
          assert.equal(res.status, 200, await res.clone().text());
          await res.text();
          byGroup[g]!.add(res.headers.get('x-tailgate-worker')!);
        }
      }
      let hits = 0;
      let queries = 0;
      for (const w of fleet.workers) {
        const text = await (await fetch(`${w.url}/metrics`)).text();
        hits += counter(text, 'vllm:prefix_cache_hits_total');
        queries += counter(text, 'vllm:prefix_cache_queries_total');
      }
      return { workersPerGroup: byGroup.map((s) => s.size), hits, queries };
    } finally {
      await router.close();
    }
  } finally {
    await fleet.close();
  }
}

test('live: prefix keeps each system prompt on one worker and its blocks hit that worker\'s cache; p2c scatters them', async () => {
  const prefix = await run('prefix');
  const p2c = await run('p2c');
  assert.deepEqual(prefix.workersPerGroup, Array(GROUPS).fill(1), 'each group on one worker');
  // Every repeat finds its system prompt cached: 4 groups x 4 repeats x 320 tokens.
  assert.ok(prefix.hits >= GROUPS * (ROUNDS - 1) * SYSTEM_WORDS, `prefix hits ${prefix.hits} of ${prefix.queries}`);
  assert.ok(p2c.workersPerGroup.reduce((a, b) => a + b) > GROUPS, `p2c workers per group ${p2c.workersPerGroup.join(',')}`);
  assert.ok(prefix.hits / prefix.queries > p2c.hits / p2c.queries, `hit rate: prefix ${prefix.hits}/${prefix.queries}, p2c ${p2c.hits}/${p2c.queries}`);
});
