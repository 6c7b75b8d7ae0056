// A stand-in for the native addon's chat layer (prepareChat / parseChat / jsonSchemaToGrammar)
// with a toy format, so the engine's side of it (request, deltas, history) is tested without the
// addon:  <think>REASONING</think>CONTENT<call>NAME|ARGUMENTS</call>...
import type { NativeChatPlan, NativeChatRequest, NativeChatSyntax, NativeParsedMessage, NativeToolCall } from '@bmoe/core-native';
import { resolveLoadOptions } from '../src/options/api.js';
import { SessionImpl, SharedContext } from '../src/session.js';
import { FakeContext, FakeModel, type FakeScript } from './fake-native.js';
import { PreparedPrompts } from '../src/prepared-prompts.js';

/** `text` without a tail that could still become `tag` (what a streaming parse holds back). */
function holdBack(text: string, tag: string, partial: boolean): string {
  if (!partial) return text;
  for (let k = Math.min(tag.length - 1, text.length); k > 0; k--) if (text.endsWith(tag.slice(0, k))) return text.slice(0, -k);
  return text;
}

/** The toy format's parser: throws on a final text with an unclosed tag, as llama.cpp's may. */
export function toyParse(text: string, partial: boolean): NativeParsedMessage {
  let rest = text;
  let reasoningContent = '';
  if (rest.startsWith('<think>')) {
    const end = rest.indexOf('</think>');
    if (end < 0 && !partial) throw new Error('unclosed <think>');
    reasoningContent = end < 0 ? holdBack(rest.slice(7), '</think>', partial) : rest.slice(7, end);
    rest = end < 0 ? '' : rest.slice(end + 8);
  }
  const first = rest.indexOf('<call>');
  const content = first < 0 ? holdBack(rest, '<call>', partial) : rest.slice(0, first);
  const toolCalls: NativeToolCall[] = [];
  for (let at = first; at >= 0; at = rest.indexOf('<call>', at + 1)) {
    const end = rest.indexOf('</call>', at);
    if (end < 0 && !partial) throw new Error('unclosed <call>');
    const body = end < 0 ? holdBack(rest.slice(at + 6), '</call>', partial) : rest.slice(at + 6, end);
    const bar = body.indexOf('|');
    toolCalls.push({ name: bar < 0 ? body : body.slice(0, bar), arguments: bar < 0 ? '' : body.slice(bar + 1), id: '' });
  }
  return { content, reasoningContent, toolCalls };
}

export const TOY_SYNTAX: NativeChatSyntax = { format: 99, formatName: 'toy', generationPrompt: '', parser: '', parseToolCalls: true };

export class FakeChatModel extends FakeModel {
  chatRequests: NativeChatRequest[] = [];
  grammarFor = (schemaJson: string): string => `root ::= json # ${schemaJson}`;

  prepareChat(req: NativeChatRequest): Promise<NativeChatPlan> {
    this.chatRequests.push(req);
    // As the native side does, on its worker: a schema it cannot use is refused naming the option.
    if (req.jsonSchema) {
      try {
        this.grammarFor(req.jsonSchema);
      } catch (err) {
        return Promise.reject(new Error(`jsonSchema: ${(err as Error).message}`));
      }
    }
    const grammar = req.toolsJson || req.jsonSchema || req.grammar
      ? { gbnf: req.grammar || 'root ::= derived', kind: req.toolsJson ? 'tools' as const : req.grammar ? 'user' as const : 'output' as const, lazy: false, triggers: [], generationPrompt: '' }
      : null;
    return Promise.resolve({ tokens: this.tokenize(req.messagesJson, true), grammar, additionalStops: ['<end>'], syntax: TOY_SYNTAX });
  }

  parseChat(text: string, partial: boolean, syntax: NativeChatSyntax): NativeParsedMessage {
    if (syntax !== TOY_SYNTAX) throw new Error('syntax not passed back');
    return toyParse(text, partial);
  }

  jsonSchemaToGrammar(schemaJson: string): Promise<string> {
    try {
      return Promise.resolve(this.grammarFor(schemaJson));
    } catch (err) {
      return Promise.reject(new Error(`jsonSchema: ${(err as Error).message}`));
    }
  }
}

/** Pieces of text, one per token. */
export function pieces(...texts: string[]): Uint8Array[] {
  return texts.map((t) => new TextEncoder().encode(t));
}

export function fakeChatSession(
  script: FakeScript = {},
  opts: { contextSize?: number; system?: string; model?: FakeModel } = {},
): { session: SessionImpl; ctx: FakeContext; model: FakeModel } {
  const ctx = new FakeContext(script);
  const model = opts.model ?? new FakeChatModel();
  const session = new SessionImpl({
    model,
    context: new SharedContext(ctx, 1),
    seq: 0,
    identity: { model: 'fake', modelName: 'fake.gguf' },
    prepared: new PreparedPrompts(),
    options: { ...resolveLoadOptions({ contextSize: opts.contextSize ?? 4096 }), system: opts.system ?? null, prepareTurns: false },
    cacheBudgetMiB: null,
    onClosed: () => undefined,
  });
  return { session, ctx, model };
}
