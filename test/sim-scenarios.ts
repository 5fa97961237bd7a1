import { scenarioFromObject, type Scenario } from '../src/sim/index.js';

/**
 * The seed's stall at a quarter of its concurrency, small enough for a test: 8 workers, 512
 * streams, 100 dataset entries repeated (so prompts' blocks repeat), worker 3 stalled for 8 s.
 */
export function reducedStall(): Scenario {
  return scenarioFromObject({
    name: 'reduced-stall',
    workers: 8,
    concurrency: 512,
    requestCount: 4096,
    warmupRequestCount: 512,
    faults: ['worker=3,kind=stall,at=2s,for=8s'],
    gates: ['output_token_throughput>=20000', 'time_to_first_token.p99<=2000'],
  }, 'test');
}
