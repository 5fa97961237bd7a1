import { TailgateError } from '../core/index.js';
import { AdaptivePolicy } from './adaptive.js';
import { LeastLoadedPolicy } from './least-loaded.js';
import { P2cPolicy } from './p2c.js';
import type { AdaptiveOptions, PolicyName, RoutingPolicy } from './policy.js';
import { RandomPolicy } from './random-policy.js';
import { RoundRobinPolicy } from './round-robin.js';

/**
 * A fresh policy by name (policies with state, like round-robin's cursor, are never shared).
 *
 * @example
 * const p = createPolicy('p2c');
 * p.pick(views, { model: 'Qwen/Qwen3-8B', promptTokens: 128 }, createRng(1));
 */
export function createPolicy(name: PolicyName, opts: AdaptiveOptions = {}): RoutingPolicy {
  switch (name) {
    case 'round-robin':
      return new RoundRobinPolicy();
    case 'random':
      return new RandomPolicy();
    case 'least-loaded':
      return new LeastLoadedPolicy();
    case 'p2c':
      return new P2cPolicy();
    case 'adaptive':
      return new AdaptivePolicy(opts);
    default:
      throw new TailgateError('CONFIG_INVALID', `unknown routing policy "${String(name)}"`);
  }
}
