/**
 * Caps the share of requests that are sent twice (re-dispatched or migrated): a token bucket
 * that gains `share` per fresh request, holds at most `burst`, and spends one per re-send.
 */
export class ResendBudget {
  #tokens: number;
  readonly #share: number;
  readonly #burst: number;

  constructor(share: number, burst: number) {
    this.#share = share;
    this.#burst = burst;
    this.#tokens = burst;
  }

  /** A fresh request was dispatched. */
  earn(): void {
    this.#tokens = Math.min(this.#burst, this.#tokens + this.#share);
  }

  /** A re-send is left (spends nothing). */
  get available(): boolean {
    return this.#tokens >= 1;
  }

  /** Spends one re-send if the budget allows it. */
  trySpend(): boolean {
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
