import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EventTemplate } from './event-template.js';

const part = fc.uint8Array({ minLength: 4, maxLength: 40 }).map((a) => Buffer.from(a));

test('a head or tail matches exactly where the bytes are equal, at any offset, one byte off or not', () => {
  fc.assert(
    fc.property(part, part, fc.nat(12), fc.nat(60), fc.option(fc.nat(80), { nil: null }), (head, tail, before, flipAt, cut) => {
      const t = EventTemplate.learn(head, tail)!;
      const b = Buffer.concat([Buffer.alloc(before, 0x41), head, tail]);
      if (flipAt < b.length) b[flipAt] = b[flipAt]! ^ 1;
      // A view that ends early or starts late: bounds are the view's, not the memory's.
      const view = cut === null ? b : b.subarray(Math.min(1, b.length), Math.max(1, b.length - (cut % 6)));
      const shift = view === b ? 0 : 1;
      const expect = (bytes: Buffer, at: number): boolean => at >= 0 && at + bytes.length <= view.length && view.subarray(at, at + bytes.length).equals(bytes);
      assert.equal(t.headAt(view, before - shift), expect(head, before - shift));
      assert.equal(t.tailAt(view, before + head.length - shift), expect(tail, before + head.length - shift));
    }),
    { numRuns: 3000 },
  );
});

test('parts of the head and tail (a payload without its framing) match bytewise', () => {
  const t = EventTemplate.learn(Buffer.from('data: {"a":"'), Buffer.from('"}\n\n'))!;
  const payload = Buffer.from('{"a":"x"}');
  assert.ok(t.headPartAt(payload, 0, 6));
  assert.ok(t.tailPartAt(payload, 7, 2));
  assert.ok(!t.tailPartAt(payload, 6, 2));
  assert.equal(EventTemplate.learn(Buffer.from('abc'), Buffer.from('abcd')), null, 'a part shorter than a word is not learned');
  const fromEvent = EventTemplate.ofEvent(Buffer.from('xx{"a":"y"}xx'), 2, 8, 9, 11)!;
  const event = Buffer.from('data: {"a":"zz"}\n\n');
  assert.ok(fromEvent.headAt(event, 0) && fromEvent.tailAt(event, 14), 'learned from a payload in place, with its framing');
});

test('a freed template matches nothing, and the template that reuses its slot matches only its own bytes', () => {
  const a = EventTemplate.learn(Buffer.from('data: {"a":"'), Buffer.from('"}\n\n'))!;
  const keep = EventTemplate.learn(Buffer.from('data: {"k":"'), Buffer.from('"}\n\n'))!;
  const evA = Buffer.from('data: {"a":"x"}\n\n');
  const evB = Buffer.from('data: {"b":"x"}\n\n');
  const evK = Buffer.from('data: {"k":"x"}\n\n');
  assert.ok(a.headAt(evA, 0));
  a.free();
  a.free();
  assert.ok(!a.headAt(evA, 0) && !a.tailAt(evA, 13), 'freed: no match');
  const b = EventTemplate.learn(Buffer.from('data: {"b":"'), Buffer.from('"}\n\n'))!;
  assert.ok(b.headAt(evB, 0) && b.tailAt(evB, 13) && !b.headAt(evA, 0), 'the new template has its own words');
  assert.ok(keep.headAt(evK, 0) && keep.tailAt(evK, 13) && !keep.headAt(evB, 0), 'a live template is untouched');
  // Many live at once: the shared block grows and every template keeps its words.
  const many = Array.from({ length: 3000 }, (_, i) => EventTemplate.learn(Buffer.from(`data: {"n${i}":"`), Buffer.from(`"}${i}\n\n`))!);
  many.forEach((t, i) => assert.ok(t.headAt(Buffer.from(`data: {"n${i}":"`), 0) && t.tailAt(Buffer.from(`"}${i}\n\n`), 0), `template ${i}`));
  for (const t of many) t.free();
});
