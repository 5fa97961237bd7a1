// The layer rule (eslint-layers.mjs, on in eslint.config.js) fails on imports that break the layers of
// docs/architecture.md#layers: planted files are linted by the project's own config, only that rule kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ESLint } from 'eslint';

const ROOT = resolve(import.meta.dirname, '..');
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: { languageOptions: { parserOptions: { project: null, projectService: false } } },
  ruleFilter: ({ ruleId }) => ruleId === 'tailgate/layers',
});

/** The layer rule's messages for `code` as if it were the file `path`. */
async function problems(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`);
}

const cases: { what: string; path: string; code: string; expect: RegExp | null }[] = [
  { what: 'a model imports core through its door', path: 'src/engine/planted.ts', code: "import { createRng } from '../core/index.js';\nexport const r = createRng;", expect: null },
  { what: 'engine/ imports a service', path: 'src/engine/planted.ts', code: "import { startFleet } from '../fleet/index.js';\nexport const f = startFleet;", expect: /engine\/ may not import fleet\/: .* only core/ },
  { what: 'routing/ loads the simulator dynamically', path: 'src/routing/planted.ts', code: "export const sim = () => import('../sim/index.js');", expect: /routing\/ may not import sim\// },
  { what: 'core/ names a router type', path: 'src/core/planted.ts', code: "export type R = import('../router/index.js').Router;", expect: /core\/ may not import router\// },
  { what: 'a re-export reaches upward', path: 'src/stats/planted.ts', code: "export { runBench } from '../bench/index.js';", expect: /stats\/ may not import bench\// },
  { what: 'cli/ skips bench/index.ts', path: 'src/cli/planted.ts', code: "import { resetKvCache } from '../bench/server-control.js';\nexport const r = resetKvCache;", expect: /skips bench\/index\.ts/ },
  { what: 'a service uses a sideways service its row names', path: 'src/validate/planted.ts', code: "import { runBench } from '../bench/index.js';\nexport const r = runBench;", expect: null },
  { what: 'a service uses one its row does not name', path: 'src/gate/planted.ts', code: "import { runBench } from '../bench/index.js';\nexport const r = runBench;", expect: /gate\/ may not import bench\// },
  { what: 'src/ ships a test double', path: 'src/router/planted.ts', code: "import { startFakeUpstream } from '../../test/doubles/fake-upstream.js';\nexport const s = startFakeUpstream;", expect: /outside src\// },
  { what: 'a unit test may use a double and set up across layers', path: 'src/engine/planted.test.ts', code: "import '../../test/doubles/fake-upstream.js';\nimport '../sim/index.js';", expect: null },
  { what: 'a unit test still enters through the door', path: 'src/engine/planted.test.ts', code: "import '../core/units.js';", expect: /skips core\/index\.ts/ },
  { what: 'a new folder without a row', path: 'src/newfolder/planted.ts', code: "import '../core/index.js';", expect: /src\/newfolder\/ has no row in the layer table/ },
];

for (const c of cases) {
  test(`layer rule: ${c.what}`, async () => {
    const found = await problems(c.path, c.code);
    if (c.expect === null) assert.deepEqual(found, []);
    else {
      assert.equal(found.length, 1, `expected one problem, got ${JSON.stringify(found)}`);
      assert.match(found[0]!, /^tailgate\/layers: /);
      assert.match(found[0]!, c.expect);
    }
  });
}

test('every folder under src/ has a row in the layer table', async () => {
  for (const e of readdirSync(join(ROOT, 'src'), { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    assert.deepEqual(await problems(`src/${e.name}/planted.ts`, "import '../core/index.js';"), [], `src/${e.name}/`);
  }
});
