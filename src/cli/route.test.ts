import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RouterOptions } from '../router/index.js';
import { ROUTER_DEFAULTS } from '../routing/index.js';
import { libraryOptions, parseCli } from './option-table.js';
import { helpEntries } from '../../test/helpers.js';
import { buildProgram } from './program.js';
import { ROUTE_OPTIONS, registerRoute, routePolicy } from './route.js';

test('route flags: --prefix-affinity turns adaptive into prefix, refuses other policies, passes the prefix options on', () => {
  assert.deepEqual(routePolicy({ policy: 'adaptive' }), { policy: 'adaptive', prefix: {} });
  assert.deepEqual(routePolicy({ policy: 'adaptive', prefixAffinity: true, prefixIndexBlocks: 4096, prefixBalanceAbs: 4, prefixBalanceRel: 1.5 }), {
    policy: 'prefix',
    prefix: { indexBlocks: 4096, balanceAbs: 4, balanceRel: 1.5 },
  });
  assert.equal(routePolicy({ policy: 'prefix', prefixAffinity: true }).policy, 'prefix');
  assert.throws(() => routePolicy({ policy: 'p2c', prefixAffinity: true }), /--prefix-affinity applies to --policy adaptive, not p2c/);
});

/** `tailgate route --help`, one entry per flag. */
function routeHelpEntries(): Map<string, string> {
  return helpEntries(buildProgram([registerRoute]).commands.find((c) => c.name() === 'route')!.helpInformation());
}

test('route options table: a row gives the flag, the help with its default from ROUTER_DEFAULTS, and the library option', () => {
  const D = ROUTER_DEFAULTS;
  const help = routeHelpEntries();
  // key, flag, the default as the help shows it (from the defaults module), argv, the library options it sets
  const rows: [keyof typeof ROUTE_OPTIONS, string, string, string[], Partial<RouterOptions>][] = [
    ['port', '--port <port>', String(D.port), ['--port', '0'], { port: 0 }],
    ['host', '--host <addr>', `"${D.host}"`, ['--host', '0.0.0.0'], { host: '0.0.0.0' }],
    ['seed', '--seed <n>', String(D.seed), ['--seed', '7'], { seed: 7 }],
    ['maxQueue', '--max-queue <n>', String(D.maxQueue), ['--max-queue', '16'], { maxQueue: 16 }],
    ['queueTimeout', '--queue-timeout <dur>', '1m', ['--queue-timeout', '2s'], { queueTimeoutMs: 2000 }],
    ['deadlineFloor', '--deadline-floor <dur>', '1s', ['--deadline-floor', '250ms'], { deadlineFloorMs: 250 }],
    ['maxResendShare', '--max-resend-share <x>', String(D.maxResendShare), ['--max-resend-share', '0.5'], { maxResendShare: 0.5 }],
    ['migrateMaxBytes', '--migrate-max-bytes <size>', '256KiB', ['--migrate-max-bytes', '1MiB'], { migrateMaxBytes: 1024 ** 2 }],
    ['maxBody', '--max-body <size>', '4MiB', ['--max-body', '64KiB'], { maxBodyBytes: 65_536 }],
    ['maxRetries', '--max-retries <n>', String(D.maxRetries), ['--max-retries', '0'], { maxRetries: 0 }],
    ['drainDelay', '--drain-delay <dur>', '5s', ['--drain-delay', '0'], { drainDelayMs: 0 }],
    ['drainTimeout', '--drain-timeout <dur>', '30s', ['--drain-timeout', '1m'], { drainTimeoutMs: 60_000 }],
    ['headerTimeout', '--header-timeout <dur>', '10s', ['--header-timeout', '3s'], { headerTimeoutMs: 3000 }],
    ['bodyTimeout', '--body-timeout <dur>', '30s', ['--body-timeout', '3s'], { bodyTimeoutMs: 3000 }],
    ['keepAliveTimeout', '--keep-alive-timeout <dur>', '65s', ['--keep-alive-timeout', '5s'], { keepAliveTimeoutMs: 5000 }],
    ['maxRequestsPerConnection', '--max-requests-per-connection <n>', String(D.maxRequestsPerConnection), ['--max-requests-per-connection', '0'], { maxRequestsPerConnection: 0 }],
    ['upstreamHeaderTimeout', '--upstream-header-timeout <dur>', '10m', ['--upstream-header-timeout', '1m'], { upstreamHeaderTimeoutMs: 60_000 }],
    ['upstreamIdleTimeout', '--upstream-idle-timeout <dur>', '5m', ['--upstream-idle-timeout', '1m'], { upstreamIdleTimeoutMs: 60_000 }],
    ['sendTimeout', '--send-timeout <dur>', '1m', ['--send-timeout', '5s'], { sendTimeoutMs: 5000 }],
    ['ttftDeadline', '--ttft-deadline <auto|dur|off>', 'auto for adaptive and prefix, off otherwise', ['--ttft-deadline', '800ms'], { ttftDeadline: 800 }],
    ['maxInflightPerWorker', '--max-inflight-per-worker <n>', `for adaptive and prefix: ${D.capFactor} x the fair share, at least ${D.capFloor}; none otherwise`, ['--max-inflight-per-worker', '4'], { maxInflightPerWorker: 4 }],
    ['failureRescue', '--no-failure-rescue', '', ['--no-failure-rescue'], { failureRescue: false }],
    ['prefixIndexBlocks', '--prefix-index-blocks <n>', String(D.prefixIndexBlocks), [], {}],
    ['procs', '--procs <n>', String(D.procs), [], {}],
    ['priorityHeader', '--priority-header <name>', D.priorityHeader, [], {}],
    ['sessionTtl', '--session-ttl <duration>', '10m', [], {}],
  ];
  const libDefaults = libraryOptions<RouterOptions>(ROUTE_OPTIONS, parseCli(ROUTE_OPTIONS, []));
  for (const [key, flag, shown, argv, lib] of rows) {
    const entry = help.get(flag);
    assert.ok(entry !== undefined, `${flag} is in the help`);
    if (shown !== '') assert.ok(entry.endsWith(`(default: ${shown})`), `${flag} shows its default ${shown}: ${entry}`);
    assert.deepEqual(libraryOptions<RouterOptions>(ROUTE_OPTIONS, parseCli(ROUTE_OPTIONS, argv)), { ...libDefaults, ...lib }, `${flag} ${argv.join(' ')}`);
    // the row's default is the library option when the flag is absent
    const row = ROUTE_OPTIONS[key];
    if (row.lib !== undefined && 'default' in row) assert.equal(libDefaults[row.lib], row.default, `${flag} defaults to the library option`);
  }
  // every row is one help entry, and every default it has shows there
  for (const [key, row] of Object.entries(ROUTE_OPTIONS)) {
    const entry = [...help].find(([f]) => f.split(' ')[0] === `--${row.negate ? 'no-' : ''}${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
    assert.ok(entry, `--${key} is in the help`);
    if (('default' in row && row.negate === undefined) || row.defaultNote !== undefined) assert.match(entry[1], /\(default: [^)]+\)$/, `${entry[0]} shows a default`);
  }
  assert.equal(help.size, Object.keys(ROUTE_OPTIONS).length);
  // a bad value is commander's one-line error (exit 2 in the CLI)
  assert.throws(() => parseCli(ROUTE_OPTIONS, ['--queue-timeout', 'soon']), /option '--queue-timeout <dur>' argument 'soon' is invalid\. expected a duration such as 250ms, 20s or 1m/);
});
