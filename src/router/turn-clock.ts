import type { Clock } from '../core/index.js';

/**
 * Stamps for reads: one reading of `clock` per event-loop turn. The reads a turn handles were all
 * waiting when it began, so they share the stamp of the first (which is also closer to when they
 * arrived than a reading taken after the turn's earlier work); a relay then reads the clock once
 * per turn, not once per read.
 */
export class TurnClock {
  readonly #clock: Clock;
  #nowMs = 0;
  #fresh = false;
  readonly #expire = (): void => {
    this.#fresh = false;
  };

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  now(): number {
    if (!this.#fresh) {
      this.#nowMs = this.#clock.now();
      this.#fresh = true;
      // immediates run once the turn's reads (the poll phase) are done
      setImmediate(this.#expire);
    }
    return this.#nowMs;
  }
}
