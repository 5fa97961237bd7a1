import { TailgateError } from '../core/index.js';
import { AdaptivePolicy } from './adaptive.js';
import { LeastLoadedPolicy } from './least-loaded.js';
import { LeastTokensPolicy } from './least-tokens.js';
import { P2cPolicy } from './p2c.js';
import type { PolicyName, PolicyOptions, RoutingPolicy } from './policy.js';
import { PrefixAffinityPolicy } from './prefix-affinity.js';
import { PrefixGreedyPolicy } from './prefix-greedy.js';
import { RandomPolicy } from './random-policy.js';
import { RoundRobinPolicy } from './round-robin.js';

/**
 * A fresh policy by name (policies with state, like round-robin's cursor or a prefix index, are
 * never shared). `opts` tunes `adaptive` (and `prefix`'s fallback) and prefix affinity.
 *
 * @example
 * const p = createPolicy('p2c');
 * p.pick(views, { model: 'Qwen/Qwen3-8B', promptTokens: 128 }, createRng(1));
 */
export function createPolicy(name: PolicyName, opts: PolicyOptions = {}): RoutingPolicy {
  switch (name) {
    case 'round-robin':
      return new RoundRobinPolicy();
    case 'random':
      return new RandomPolicy();
    case 'least-loaded':
      return new LeastLoadedPolicy();
    case 'least-tokens':
      return new LeastTokensPolicy();
    case 'p2c':
      return new P2cPolicy();
    case 'adaptive':
      return new AdaptivePolicy(opts);
    case 'prefix':
      return new PrefixAffinityPolicy(opts);
    case 'prefix-greedy':
      return new PrefixGreedyPolicy(opts.prefix);
    default:
      throw new TailgateError('CONFIG_INVALID', `unknown routing policy "${String(name)}"`);
  }
}
