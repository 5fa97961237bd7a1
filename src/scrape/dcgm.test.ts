import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dcgmPick, describeGpu, gpuValueKey, mapGpusToWorkers, parseGpuMap, parsePrometheus, readDcgm, type GpuIdentity } from './index.js';

const fixture = (name: string): string => readFileSync(new URL(`./testdata/${name}`, import.meta.url), 'utf8');

test('the recorded dcgm-exporter page: one reading per GPU with util, power, clocks, reasons, XID and Kubernetes labels', () => {
  const page = parsePrometheus(fixture('dcgm-exporter-metrics.txt'));
  assert.equal(page.malformedLines, 0);
  const gpus = readDcgm(page.samples);
  assert.equal(gpus.length, 2);
  const [busy, stalled] = gpus as [NonNullable<(typeof gpus)[0]>, NonNullable<(typeof gpus)[0]>];
  assert.deepEqual(
    { gpu: busy.gpu, uuid: busy.uuid, host: busy.hostname, pod: busy.pod, ns: busy.namespace, util: busy.utilPct, power: busy.powerW, sm: busy.smClockMhz, mem: busy.memClockMhz, reasons: busy.clockEventReasons, xid: busy.xid },
    { gpu: '0', uuid: 'GPU-5c3a1f0e-9b7d-4e2a-8f61-2d4c7b9e0a13', host: 'gpu-h100-node-03', pod: 'vllm-qwen3-8b-7d9c5b8f6-x2k4p', ns: 'llm-serving', util: 95, power: 652.417, sm: 1980, mem: 2619, reasons: 0, xid: 0 },
  );
  // The seed's signature: the stalled worker's GPU idles at low power with its clocks untouched.
  assert.equal(stalled.utilPct, 12);
  assert.equal(stalled.powerW, 131.582);
  assert.equal(stalled.smClockMhz, 1980);
  assert.equal(stalled.pod, 'vllm-qwen3-8b-7d9c5b8f6-m9q7t');
  assert.equal(describeGpu(stalled), 'gpu 1 (GPU-b18e6d42) on gpu-h100-node-03');
});

test('GPUs map to workers by pod label (worker id, host, or first DNS label) and by --gpu-map', () => {
  const ids = readDcgm(parsePrometheus(fixture('dcgm-exporter-metrics.txt')).samples);
  // Workers addressed by pod DNS name (`pod.service.ns`): the first label is the pod.
  const byPod = mapGpusToWorkers(ids, ['vllm-qwen3-8b-7d9c5b8f6-x2k4p.vllm.llm-serving:8000', 'vllm-qwen3-8b-7d9c5b8f6-m9q7t:8000']);
  assert.equal(byPod.byWorker['vllm-qwen3-8b-7d9c5b8f6-x2k4p.vllm.llm-serving:8000']![0]!.gpu, '0');
  assert.equal(byPod.byWorker['vllm-qwen3-8b-7d9c5b8f6-m9q7t:8000']![0]!.gpu, '1');
  assert.deepEqual(byPod.unmapped, []);
  assert.equal(byPod.how['vllm-qwen3-8b-7d9c5b8f6-m9q7t:8000'], 'pod');

  // Workers by IP: the pod label says nothing, so an explicit map is needed; UUID and Hostname/gpu both work.
  const workers = ['10.42.0.17:8000', '10.42.0.18:8000'];
  const none = mapGpusToWorkers(ids, workers);
  assert.deepEqual(none.workersWithoutGpu, workers);
  assert.equal(none.unmapped.length, 2);
  const explicit = mapGpusToWorkers(ids, workers, parseGpuMap(['10.42.0.17:8000=GPU-5c3a1f0e-9b7d-4e2a-8f61-2d4c7b9e0a13', '10.42.0.18:8000=gpu-h100-node-03/1']));
  assert.equal(explicit.byWorker['10.42.0.17:8000']![0]!.uuid, 'GPU-5c3a1f0e-9b7d-4e2a-8f61-2d4c7b9e0a13');
  assert.equal(explicit.byWorker['10.42.0.18:8000']![0]!.gpu, '1');
  assert.deepEqual(explicit.problems, []);
  // A bare index works when the GPUs come from one node; a typo is reported, not ignored.
  const typo = mapGpusToWorkers(ids, workers, parseGpuMap(['10.42.0.18:8000=1', '10.42.0.17:8000=GPU-nope']));
  assert.equal(typo.byWorker['10.42.0.18:8000']![0]!.gpu, '1');
  assert.match(typo.problems[0]!, /GPU-nope: no GPU/);
  assert.throws(() => parseGpuMap(['10.42.0.18:8000']), /invalid --gpu-map "10\.42\.0\.18:8000" \(expected WORKER=GPU/);
});

test('a hand-written page: older throttle-reasons name, XID, two GPUs in one pod (tensor parallel), profiling-only utilisation', () => {
  const L = (gpu: number, uuid: string, pod: string, extra = ''): string =>
    `gpu="${gpu}",UUID="${uuid}",pci_bus_id="00000000:${gpu === 0 ? '18' : '2A'}:00.0",device="nvidia${gpu}",modelName="NVIDIA H100 80GB HBM3",Hostname="node-07",DCGM_FI_DRIVER_VERSION="550.90.07",container="vllm",${extra}namespace="llm",pod="${pod}"`;
  const a = L(0, 'GPU-aaaaaaaa-0000-4000-8000-000000000001', 'vllm-tp2-0');
  const b = L(1, 'GPU-aaaaaaaa-0000-4000-8000-000000000002', 'vllm-tp2-0');
  const text = [
    '# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).', '# TYPE DCGM_FI_DEV_SM_CLOCK gauge',
    `DCGM_FI_DEV_SM_CLOCK{${a}} 1980`, `DCGM_FI_DEV_SM_CLOCK{${b}} 810`,
    '# HELP DCGM_FI_DEV_CLOCK_THROTTLE_REASONS Current clock throttle reasons.', '# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge',
    `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{${a}} 0`, `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{${b}} 72`,
    '# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).', '# TYPE DCGM_FI_DEV_POWER_USAGE gauge',
    `DCGM_FI_DEV_POWER_USAGE{${a}} 601.250000`, `DCGM_FI_DEV_POWER_USAGE{${b}} 388.000000`,
    '# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.', '# TYPE DCGM_FI_DEV_XID_ERRORS gauge',
    `DCGM_FI_DEV_XID_ERRORS{${L(0, 'GPU-aaaaaaaa-0000-4000-8000-000000000001', 'vllm-tp2-0', 'err_code="0",err_msg="No Error",')}} 0`,
    `DCGM_FI_DEV_XID_ERRORS{${L(1, 'GPU-aaaaaaaa-0000-4000-8000-000000000002', 'vllm-tp2-0', 'err_code="79",err_msg="GPU has fallen off the bus",')}} 79`,
    '# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.', '# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge',
    `DCGM_FI_PROF_GR_ENGINE_ACTIVE{${a}} 0.912000`, `DCGM_FI_PROF_GR_ENGINE_ACTIVE{${b}} 0.990000`,
    '',
  ].join('\n');
  const ids = new Map<string, GpuIdentity>();
  const picked = dcgmPick(ids)(parsePrometheus(text).samples);
  assert.equal(ids.size, 2);
  const k1 = 'GPU-aaaaaaaa-0000-4000-8000-000000000002';
  assert.equal(picked[gpuValueKey('clockEventReasons', k1)], 72);
  assert.equal(picked[gpuValueKey('xid', k1)], 79);
  assert.equal(picked[gpuValueKey('smClockMhz', k1)], 810);
  assert.equal(picked[gpuValueKey('utilPct', k1)], 99);
  const m = mapGpusToWorkers([...ids.values()], ['vllm-tp2-0.vllm:8000']);
  assert.deepEqual(m.byWorker['vllm-tp2-0.vllm:8000']!.map((g) => g.gpu), ['0', '1']);
});
