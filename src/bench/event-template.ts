/**
 * The fixed bytes of a stream's ordinary SSE event around its content, learned from one event and
 * matched against the next ones: `head` (`data: ` and the payload up to the content's opening quote)
 * and `tail` (from the closing quote to the blank line). Both are kept as little-endian words in a
 * slot of one block shared by every template (no typed array object and backing store of its own
 * per stream: a match touches fewer cache lines, which matters with thousands of streams) and
 * compared four bytes at a time through a DataView: for ~200 bytes this beats `Buffer#compare`
 * (whose argument checks and native call cost more than the comparison). {@link free} gives the
 * slot back when the template is no longer used.
 *
 * @example
 * const t = EventTemplate.learn(Buffer.from('data: {"c":"'), Buffer.from('"}\n\n'))!;
 * const ev = Buffer.from('data: {"c":"hi"}\n\n');
 * t.headAt(ev, 0) && t.tailAt(ev, 14); // true
 */
export class EventTemplate {
  readonly headLength: number;
  readonly tailLength: number;
  /** Where this template's words start in the shared block: head words, then tail words; each part's last word is its last 4 bytes (overlapping the word before when the length is not a multiple of 4). -1 once freed. */
  #at: number;
  readonly #headWords: number;
  readonly #wordCount: number;
  /** Head then tail bytes, for matching parts of them (a payload without its framing); off the hot path. */
  readonly #bytes: Buffer;

  /** `bytes` holds the head then the tail. */
  private constructor(bytes: Buffer, headLength: number) {
    this.#bytes = bytes;
    this.headLength = headLength;
    this.tailLength = bytes.length - headLength;
    this.#headWords = Math.ceil(headLength / 4);
    this.#wordCount = this.#headWords + Math.ceil(this.tailLength / 4);
    this.#at = takeSlot(this.#wordCount);
    fillWords(this.#at, fillWords(this.#at, 0, bytes, 0, headLength), bytes, headLength, this.tailLength);
  }

  /** Gives the words' slot back for another template; this one matches nothing after. Idempotent. */
  free(): void {
    if (this.#at < 0) return;
    freeSlot(this.#at, this.#wordCount);
    this.#at = -1;
  }

  /** A template of these parts; null when a part is shorter than one word (no real event is). */
  static learn(head: Buffer, tail: Buffer): EventTemplate | null {
    return head.length >= 4 && tail.length >= 4 ? new EventTemplate(Buffer.concat([head, tail]), head.length) : null;
  }

  /**
   * The template of an event sent as `data: `, the payload `b[start, end)` and a blank line, whose
   * content's string body is `b[from, to)`; null as for `learn`. Cheap: one copy, no views.
   */
  static ofEvent(b: Buffer, start: number, from: number, to: number, end: number): EventTemplate | null {
    const headLength = DATA_FIELD.length + from - start;
    const bytes = Buffer.allocUnsafe(headLength + end - to + EVENT_END.length);
    DATA_FIELD.copy(bytes, 0);
    b.copy(bytes, DATA_FIELD.length, start, from);
    b.copy(bytes, headLength, to, end);
    EVENT_END.copy(bytes, bytes.length - EVENT_END.length);
    return headLength >= 4 && bytes.length - headLength >= 4 ? new EventTemplate(bytes, headLength) : null;
  }

  /** Whether `b` holds the head at `at`. */
  headAt(b: Buffer, at: number): boolean {
    return this.#match(b, at, 0, this.#headWords, this.headLength);
  }

  /** Whether `b` holds the tail at `at`. */
  tailAt(b: Buffer, at: number): boolean {
    return this.#match(b, at, this.#headWords, this.#wordCount, this.tailLength);
  }

  /** Whether `b[at, ...)` holds the head's bytes `[from, headLength)`. */
  headPartAt(b: Buffer, at: number, from: number): boolean {
    return this.#matchBytes(b, at, from, this.headLength);
  }

  /** Whether `b[at, ...)` holds the tail's bytes `[0, to)`. */
  tailPartAt(b: Buffer, at: number, to: number): boolean {
    return this.#matchBytes(b, at, this.headLength, this.headLength + to);
  }

  /** Where the head's words start in the shared block ({@link wordsAt}); -1 once freed. */
  get slot(): number {
    return this.#at;
  }

  /** The head's words; the tail's follow them in the slot. */
  get headWords(): number {
    return this.#headWords;
  }

  /** The tail's words. */
  get tailWords(): number {
    return this.#wordCount - this.#headWords;
  }

  #match(b: Buffer, at: number, first: number, last: number, length: number): boolean {
    return this.#at >= 0 && wordsAt(b, at, this.#at + first, last - first, length);
  }

  #matchBytes(b: Buffer, at: number, from: number, to: number): boolean {
    if (at < 0 || at + to - from > b.length) return false;
    const bytes = this.#bytes;
    for (let i = from; i < to; i++) if (b[at + i - from] !== bytes[i]) return false;
    return true;
  }
}

/** How an ordinary event starts and ends on the wire (vLLM, SGLang and Dynamo all frame them so). */
export const DATA_FIELD = Buffer.from('data: ');
/** The blank line that ends an SSE event. */
export const EVENT_END = Buffer.from('\n\n');

/**
 * Every live template's words, one slot each; slots freed are reused by size (a run's streams learn
 * templates of a few sizes), the block doubles when full.
 */
const slab = { words: new Int32Array(16 * 1024), used: 0, free: new Map<number, number[]>() };

function takeSlot(count: number): number {
  const reuse = slab.free.get(count)?.pop();
  if (reuse !== undefined) return reuse;
  if (slab.used + count > slab.words.length) {
    const grown = new Int32Array(Math.max(2 * slab.words.length, slab.used + count));
    grown.set(slab.words.subarray(0, slab.used));
    slab.words = grown;
  }
  slab.used += count;
  return slab.used - count;
}

function freeSlot(at: number, count: number): void {
  let list = slab.free.get(count);
  if (!list) slab.free.set(count, (list = []));
  list.push(at);
}

/**
 * Whether `b` holds, at `at`, the `length` bytes whose `count` words start at `slot` in the shared
 * block (a template's {@link EventTemplate.slot}, plus its head's words for its tail). A caller that
 * keeps these numbers itself matches without touching the template object.
 */
export function wordsAt(b: Buffer, at: number, slot: number, count: number, length: number): boolean {
  if (at < 0 || at + length > b.length) return false;
  const view = viewOf(b);
  const words = slab.words;
  const top = slot + count - 1;
  for (let j = slot; j < top; j++) if (view.getInt32(at + 4 * (j - slot), true) !== words[j]) return false;
  return view.getInt32(at + length - 4, true) === words[top];
}

/** The words of `bytes[at, at + length)` into the slot at `slot` from its index `j` (the last is the part's last 4 bytes); returns the next index. */
function fillWords(slot: number, j: number, bytes: Buffer, at: number, length: number): number {
  const words = slab.words;
  for (let i = 0; i + 4 < length; i += 4) words[slot + j++] = wordAt(bytes, at + i);
  words[slot + j++] = wordAt(bytes, at + length - 4);
  return j;
}

/** The little-endian 32-bit word at `at`, as `DataView#getInt32(at, true)` reads it. */
function wordAt(b: Buffer, at: number): number {
  return b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24);
}

/** A view of the last buffer read, kept while reads keep coming in it (a transport reuses one buffer). */
let lastBuffer: Buffer | null = null;
let lastView: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));

function viewOf(b: Buffer): DataView<ArrayBufferLike> {
  if (b !== lastBuffer) {
    lastBuffer = b;
    lastView = new DataView(b.buffer, b.byteOffset, b.length);
  }
  return lastView;
}
