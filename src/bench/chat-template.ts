import { TailgateError } from '../core/index.js';
import { loadChatTemplate, messageText, verbatimMessages, verbatimText, type PromptMessage, type VerbatimTurn } from '../workload/index.js';
import type { ResolvedBenchOptions } from './options.js';

/**
 * Under `--apply-chat-template` on the chat endpoint, the options with the tokenizer's chat
 * template attached (loaded once, `@huggingface/jinja` imported only then); otherwise as given.
 *
 * @throws TailgateError CONFIG_INVALID when the tokenizer has no chat template (AIPerf would quietly count the bare text)
 */
export async function withChatTemplate(o: ResolvedBenchOptions): Promise<ResolvedBenchOptions> {
  if (!o.applyChatTemplate || o.endpointType !== 'chat' || o.tokenizer.chatTemplate !== undefined) return o;
  const template = await loadChatTemplate(o.tokenizer);
  if (template === null) {
    throw new TailgateError('CONFIG_INVALID', `--apply-chat-template: tokenizer ${o.tokenizer.name} has no chat_template (a tokenizer_config.json beside its tokenizer.json); give --tokenizer one that has, or drop the flag to count the bare text`);
  }
  return { ...o, tokenizer: { ...o.tokenizer, chatTemplate: template } };
}

/**
 * A request's input tokens as the client counts them: the messages as the chat template renders
 * them when one is attached (AIPerf's record processor under `--apply-chat-template`), else their
 * text joined by newlines.
 */
export function promptTokens(o: ResolvedBenchOptions, messages: readonly PromptMessage[]): number {
  const t = o.tokenizer.chatTemplate;
  if (t !== undefined) return t.count(messages.map((m) => ({ role: m.role, content: messageText(m) })));
  // counted on the text as sent: a sub-word tokenizer need not count joined pieces as their sum
  return o.tokenizer.count(messages.map(messageText).join('\n'));
}

/** A verbatim trace row's input tokens: its chat messages through the chat template when one is attached (AIPerf templates chat-shape payloads), else its text. */
export function verbatimTokens(o: ResolvedBenchOptions, v: VerbatimTurn): number {
  const t = o.tokenizer.chatTemplate;
  const messages = t === undefined ? null : verbatimMessages(v);
  return t !== undefined && messages !== null ? t.count(messages) : o.tokenizer.count(verbatimText(v));
}
