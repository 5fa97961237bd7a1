import type { RequestRecord, Rng, VirtualClock } from '../core/index.js';
import { arrivals } from '../workload/index.js';
import type { Scenario } from './scenario.js';
import type { SimRequests } from './sim-attempt.js';
import { SimWorkload, type TurnPlan } from './sim-workload.js';

type Phase = RequestRecord['phase'];

/**
 * The simulator's AIPerf-like clients, as bench/ runs them: warm-up, then profiling, each phase
 * sending its count under the scenario's load (closed loop, open loop at a rate, a timed schedule,
 * or one load per tenant), a closed-loop slot going on with its conversation's next turn.
 */
export class SimClients {
  readonly counts = {
    warmup: { issued: 0, done: 0, total: 0 },
    profiling: { issued: 0, done: 0, total: 0 },
  };
  currentPhase: Phase;
  /** The profiling phase has ended (every request it sent did). */
  finished = false;
  profilingStartMs = Number.NaN;
  private seq = 0;
  private replicaCursor = 0;
  private readonly shareTotal: number;
  // Sessions (and their token ids) are built once; requests draw them as bench does.
  private readonly workload: SimWorkload;
  private readonly workloads: SimWorkload[];

  /** `dispatch` sends started request `q` through router replica `feIndex`. */
  constructor(
    private readonly scenario: Scenario,
    private readonly clock: VirtualClock,
    private readonly rng: Rng,
    private readonly replicaRng: Rng,
    private readonly tenantRng: Rng | null,
    private readonly replicas: number,
    private readonly requests: SimRequests,
    private readonly dispatch: (q: number, feIndex: number) => void,
  ) {
    const tenants = scenario.tenants ?? [];
    this.counts.warmup.total = scenario.warmupRequestCount;
    this.counts.profiling.total = scenario.requestCount;
    this.currentPhase = scenario.warmupRequestCount > 0 ? 'warmup' : 'profiling';
    this.shareTotal = tenants.reduce((a, t) => a + t.share, 0);
    const workload = (this.workload = new SimWorkload(scenario));
    // a tenant with its own prompt or answer lengths draws from its own dataset
    this.workloads = tenants.map((t) => (t.inputTokens || t.outputTokens ? new SimWorkload({ ...scenario, inputTokens: t.inputTokens ?? scenario.inputTokens, outputTokens: t.outputTokens ?? scenario.outputTokens }) : workload));
  }

  /** The workload tenant `tenant` draws from. */
  workloadOf(tenant: number): SimWorkload {
    return this.workloads[tenant] ?? this.workload;
  }

  /** Starts the first phase. */
  start(): void {
    this.startPhase(this.currentPhase);
  }

  /** Request of `phase` ended: `followUp` is its conversation's next turn (null: none). */
  phaseDone(phase: Phase, followUp: { delayMs: number; plan: TurnPlan } | null = null, tenant = 0): void {
    const pc = this.counts[phase];
    if (pc.total > 0) pc.done++;
    if (this.closedLoop(tenant) && pc.issued < pc.total) {
      // The slot goes on with its conversation's next turn after the think time, else a new session;
      // a slot of a tenant with its own load stays that tenant's.
      const own = this.scenario.load.kind === 'tenants' ? tenant : undefined;
      if (followUp === null) this.issue(phase, own);
      else if (followUp.delayMs <= 0) this.issue(phase, tenant, followUp.plan);
      else {
        pc.issued++;
        this.clock.setTimer(this.clock.now() + followUp.delayMs, () => this.send(phase, followUp.plan, tenant));
      }
    }
    if (pc.done < pc.total) return;
    if (phase === 'warmup' && this.currentPhase === 'warmup') this.startPhase('profiling');
    else if (phase === 'profiling') this.finished = true;
  }

  private pickTenant(): number {
    const tenantRng = this.tenantRng;
    if (tenantRng === null || this.scenario.load.kind === 'tenants') return 0;
    const tenants = this.scenario.tenants!;
    let x = tenantRng.next() * this.shareTotal;
    for (let i = 0; i < tenants.length - 1; i++) if ((x -= tenants[i]!.share) < 0) return i;
    return tenants.length - 1;
  }

  private issue(phase: Phase, tenant = this.pickTenant(), plan: TurnPlan = this.workloadOf(tenant).next()): void {
    this.counts[phase].issued++;
    this.send(phase, plan, tenant);
  }

  private send(phase: Phase, plan: TurnPlan, tenant: number): void {
    const i = this.seq++;
    const feIndex = this.scenario.router.replicaPick === 'random' ? this.replicaRng.int(0, this.replicas - 1) : this.replicaCursor++ % this.replicas;
    this.dispatch(this.requests.start(i, phase, plan, this.clock.now(), feIndex, tenant), feIndex);
  }

  /** Open loop: `tenant`'s requests (a drawn one each without tenant loads) at `ratePerS`, until the phase has sent its count. */
  private openLoop(phase: Phase, load: { ratePerS: number; mode: 'constant' | 'poisson' }, tenant?: number): void {
    const pc = this.counts[phase];
    const clock = this.clock;
    const times = arrivals({ ratePerS: load.ratePerS, mode: load.mode, seed: this.rng.int(0, 0x7fffffff), startMs: clock.now(), count: pc.total });
    const next = (): void => {
      const t = times.next();
      if (t.done) return;
      clock.setTimer(t.value, () => {
        if (pc.issued >= pc.total) return;
        this.issue(phase, tenant);
        next();
      });
    };
    next();
  }

  private closedLoop(tenant: number): boolean {
    const load = this.scenario.load;
    return load.kind === 'closed' || (load.kind === 'tenants' && this.scenario.tenants![tenant]!.load!.kind === 'closed');
  }

  private startPhase(phase: Phase): void {
    const { scenario, clock } = this;
    this.currentPhase = phase;
    if (phase === 'profiling') this.profilingStartMs = clock.now();
    const pc = this.counts[phase];
    if (pc.total === 0) {
      this.phaseDone(phase);
      return;
    }
    if (scenario.load.kind === 'closed') {
      const burst = Math.min(scenario.load.concurrency, pc.total);
      for (let k = 0; k < burst; k++) this.issue(phase);
      return;
    }
    if (scenario.load.kind === 'tenants') {
      scenario.tenants!.forEach((t, i) => {
        const load = t.load!;
        if (load.kind === 'rate') this.openLoop(phase, load, i);
        else for (let k = 0; k < load.concurrency && pc.issued < pc.total; k++) this.issue(phase, i);
      });
      return;
    }
    if (scenario.load.kind === 'schedule') {
      const workload = this.workload;
      const due = workload.schedule(pc.total);
      const startMs = clock.now();
      let at = 0;
      const nextDue = (): void => {
        const session = due[at++];
        if (!session) return;
        clock.setTimer(startMs + session.timestampMs!, () => {
          this.issue(phase, this.pickTenant(), workload.first(session));
          nextDue();
        });
      };
      nextDue();
      return;
    }
    this.openLoop(phase, scenario.load);
  }
}
