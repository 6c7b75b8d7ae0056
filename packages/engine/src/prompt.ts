// From an input and its options to what the native generator runs: the prompt's tokens, the
// grammar constraining the answer, the stop strings and how the answer is read. Chat messages go
// through llama.cpp's chat layer (prepareChat: the GGUF's template, tools, JSON schemas, the
// format's parser) where the build has it; the wasm32 build formats role and text only.
import type { NativeChatRequest, NativeGrammar, NativeMedia, NativeMediaSpan, NativeModel, NativePrepareInput } from '@bmoe/core-native';
import { BmoeError, messageOf } from './errors.js';
import type { ChatParser } from './message-stream.js';
import { loadImages, MAX_IMAGE_PIXELS } from './images.js';
import { messageImages, messagesJson, plainMessages, type ChatMessage, type ToolDefinition } from './messages.js';
import type { ResolvedGenerateOptions } from './options/api.js';
import { nativePrepareOptions } from './options/native.js';

/** What a generation runs, once prepared. */
export interface PromptPlan {
  tokens: Int32Array;
  grammar: NativeGrammar | null;
  /** The option the grammar came from, named in the sampler's errors about it. */
  constraint: 'grammar' | 'jsonSchema' | 'tools';
  /** The caller's stop strings and the ones the chat format asks for. */
  stops: string[];
  /** How the answer is read; null: the text is the answer. */
  parser: ChatParser | null;
  /** The prompt's images (their cells in `tokens` carry negative ids): generate takes the handle. */
  media?: { handle: NativeMedia; spans: NativeMediaSpan[] };
}

/** A request checked (synchronously: bad options throw before anything starts), ready to prepare. */
export type PromptRequest =
  /** A raw text prompt. */
  | { kind: 'text'; text: string; grammar: NativeGrammar | null; jsonSchema: Record<string, unknown> | boolean | null; stops: string[] }
  /** Messages through the template, role and text only (a build without llama.cpp's chat layer). */
  | { kind: 'template'; messages: ChatMessage[]; template: { chatml: boolean; think: boolean }; grammar: NativeGrammar | null; stops: string[] }
  /** Messages through llama.cpp's chat layer. */
  | { kind: 'chat'; messages: ChatMessage[]; chat: Omit<NativeChatRequest, 'messagesJson'>; stops: string[] };

/** A GBNF the caller wrote: it applies from the first generated token. */
function userGrammar(gbnf: string): NativeGrammar {
  return { gbnf, kind: 'user', lazy: false, triggers: [], generationPrompt: '' };
}

function unsupported(what: string): BmoeError {
  return new BmoeError('E_UNSUPPORTED', `${what} needs the native addon (this wasm32 build has no llama.cpp chat layer)`);
}

/** Native refusals that name the option they are about ("jsonSchema: ...", "tools: ..."). */
const OPTION_ERROR = /^(jsonSchema|tools|grammar|toolChoice): |^image \d+[ :]|^the \d+ images hold /;

/** The schema as GBNF (llama.cpp's json_schema_to_grammar, on a worker thread); a schema it cannot convert is an option error. */
async function schemaGrammar(model: NativeModel, schema: Record<string, unknown> | boolean): Promise<string> {
  if (!model.jsonSchemaToGrammar) throw unsupported('jsonSchema');
  try {
    return await model.jsonSchemaToGrammar(JSON.stringify(schema));
  } catch (err) {
    const message = messageOf(err);
    throw new BmoeError('E_OPTION', OPTION_ERROR.test(message) ? message : `jsonSchema: ${message}`, { cause: err });
  }
}

/** A GBNF the caller wrote, bounded before anything runs (llama.cpp's parser and sampler are not). */
function checkedGrammar(model: NativeModel, gbnf: string): string {
  const refused = model.checkGrammar?.(gbnf) ?? '';
  if (refused !== '') throw new BmoeError('E_OPTION', refused);
  return gbnf;
}

/**
 * A schema or tools array within the bounds its conversion and grammar can run, checked now
 * (linear, synchronous) so that a request over them is refused before it waits for the model.
 */
function checkedSchemas(model: NativeModel, schema: Record<string, unknown> | boolean | null, tools: readonly ToolDefinition[]): void {
  const refused =
    (schema !== null ? model.checkJsonSchema?.(JSON.stringify(schema)) : '') || (tools.length > 0 ? model.checkTools?.(JSON.stringify(tools)) : '') || '';
  if (refused !== '') throw new BmoeError('E_OPTION', refused);
}

/** The option a chat plan's grammar came from (a raw prompt's schema grammar is a 'user' one: the plan says). */
function grammarOption(grammar: NativeGrammar | null): 'grammar' | 'jsonSchema' | 'tools' {
  return grammar?.kind === 'tools' ? 'tools' : grammar?.kind === 'output' ? 'jsonSchema' : 'grammar';
}

/** The tools to offer and the choice as llama.cpp takes it: a named function = only that tool, required. */
function toolsAndChoice(o: ResolvedGenerateOptions): { tools: ToolDefinition[]; toolChoice: 'auto' | 'none' | 'required' } {
  const tools = o.tools ?? [];
  const choice = o.toolChoice;
  if (typeof choice === 'string') {
    if (choice === 'required' && tools.length === 0) throw new BmoeError('E_OPTION', "toolChoice 'required' needs tools");
    return { tools, toolChoice: choice };
  }
  const named = tools.filter((t) => t.function.name === choice.function.name);
  if (named.length === 0) throw new BmoeError('E_OPTION', `toolChoice names '${choice.function.name}', which is not one of the tools`);
  return { tools: named, toolChoice: 'required' };
}

/** Checks the input against the options and the build; throws BmoeError ('E_OPTION', 'E_UNSUPPORTED'). */
export function checkRequest(model: NativeModel, input: string | ChatMessage[], o: ResolvedGenerateOptions): PromptRequest {
  const hasTools = o.tools !== null && o.tools.length > 0;
  if (typeof input === 'string') {
    if (hasTools) throw new BmoeError('E_OPTION', 'tools apply to chat messages, not to a raw text prompt');
    if (o.jsonSchema !== null && !model.jsonSchemaToGrammar) throw unsupported('jsonSchema');
    checkedSchemas(model, o.jsonSchema, []);
    // The schema's grammar is derived when the prompt is prepared (off the JS thread).
    const grammar = o.grammar === null ? null : userGrammar(checkedGrammar(model, o.grammar));
    return { kind: 'text', text: input, grammar, jsonSchema: o.jsonSchema, stops: o.stop };
  }
  if (hasTools && o.grammar !== null) throw new BmoeError('E_OPTION', 'grammar cannot be combined with tools');
  if (o.grammar !== null) checkedGrammar(model, o.grammar);
  if (!model.prepareChat || !model.parseChat) {
    if (hasTools) throw unsupported('tools');
    if (o.jsonSchema !== null) throw unsupported('jsonSchema');
    plainMessages(input); // what it cannot format is told now
    return { kind: 'template', messages: input, template: nativePrepareOptions(o), grammar: o.grammar === null ? null : userGrammar(o.grammar), stops: o.stop };
  }
  const { tools, toolChoice } = toolsAndChoice(o);
  checkedSchemas(model, o.jsonSchema, tools);
  const chat: Omit<NativeChatRequest, 'messagesJson'> = {
    toolsJson: tools.length > 0 ? JSON.stringify(tools) : '',
    toolChoice,
    parallelToolCalls: o.parallelToolCalls,
    jsonSchema: o.jsonSchema === null ? '' : JSON.stringify(o.jsonSchema),
    grammar: o.grammar ?? '',
    ...nativePrepareOptions(o),
  };
  return { kind: 'chat', messages: input, chat, stops: o.stop };
}

/** The same request with other messages (chat: the conversation with its oldest turns dropped). */
export function withMessages(req: PromptRequest, messages: ChatMessage[]): PromptRequest {
  return req.kind === 'text' ? req : { ...req, messages };
}

/** The conversation a request sends (empty for a raw text prompt). */
export function messagesOf(req: PromptRequest): ChatMessage[] {
  return req.kind === 'text' ? [] : req.messages;
}

async function prepareTokens(model: NativeModel, input: NativePrepareInput): Promise<Int32Array> {
  try {
    return await model.prepare(input);
  } catch (err) {
    throw new BmoeError('E_GENERATE', `could not prepare the prompt: ${messageOf(err)}`, { cause: err });
  }
}

/**
 * Templates and tokenizes on a native worker thread (a huge conversation never blocks the event
 * loop). Rejects with 'E_MODEL_CHANGED', 'E_OPTION' (a conversation the template or llama.cpp's
 * readers refuse) or 'E_GENERATE'.
 */
export async function preparePrompt(model: NativeModel, req: PromptRequest): Promise<PromptPlan> {
  const changed = model.fileStatus();
  if (changed) throw new BmoeError('E_MODEL_CHANGED', changed);
  let plan: PromptPlan;
  if (req.kind !== 'chat') {
    const input: NativePrepareInput = req.kind === 'text' ? { text: req.text } : { messages: plainMessages(req.messages), ...req.template };
    const grammar = req.kind === 'text' && req.jsonSchema !== null ? userGrammar(await schemaGrammar(model, req.jsonSchema)) : req.grammar;
    const constraint = req.kind === 'text' && req.jsonSchema !== null ? 'jsonSchema' : 'grammar';
    plan = { tokens: await prepareTokens(model, input), grammar, constraint, stops: req.stops, parser: null };
  } else {
    const { prepareChat, parseChat } = model as Required<Pick<NativeModel, 'prepareChat' | 'parseChat'>>;
    const sources = messageImages(req.messages);
    const projector = sources.length > 0 ? (model.projectorInfo?.() ?? null) : null;
    if (sources.length > 0 && !model.loadProjector) {
      throw new BmoeError('E_UNSUPPORTED', 'this build takes no images (the wasm32-wasi build has no multimodal library); `bmoe native build` makes a native one for this machine');
    }
    if (sources.length > 0 && projector === null) {
      throw new BmoeError('E_OPTION', 'the messages hold images but the model has no projector: load it with mmproj (--mmproj FILE, or an mmproj-*.gguf beside the model)');
    }
    const images = sources.length > 0 ? { images: await loadImages(sources), maxImagePixels: MAX_IMAGE_PIXELS } : {};
    let native;
    try {
      native = await prepareChat.call(model, { messagesJson: messagesJson(req.messages, projector?.marker), ...req.chat, ...images });
    } catch (err) {
      // A refusal about one option (a schema, a tool's parameters, a grammar over its bounds) names it.
      const message = messageOf(err);
      throw new BmoeError('E_OPTION', OPTION_ERROR.test(message) ? message : `could not format the conversation: ${message}`, { cause: err });
    }
    const syntax = native.syntax;
    plan = {
      tokens: native.tokens,
      grammar: native.grammar,
      constraint: grammarOption(native.grammar),
      stops: [...req.stops, ...native.additionalStops],
      parser: { parse: (text, partial) => parseChat.call(model, text, partial, syntax) },
      ...(native.media ? { media: { handle: native.media, spans: native.images ?? [] } } : {}),
    };
  }
  if (plan.tokens.length === 0) throw new BmoeError('E_OPTION', 'the prompt is empty (0 tokens)');
  return plan;
}

/**
 * The conversation without its oldest turn: leading system/developer messages stay, and a turn
 * is a user message with everything up to the next one. Null when only the last turn is left.
 */
export function dropOldestTurn(messages: readonly ChatMessage[]): ChatMessage[] | null {
  let start = 0;
  while (start < messages.length && (messages[start]!.role === 'system' || messages[start]!.role === 'developer')) start++;
  let next = start + 1;
  while (next < messages.length && messages[next]!.role !== 'user') next++;
  if (next >= messages.length) return null;
  return [...messages.slice(0, start), ...messages.slice(next)];
}

/** The prompt that does not fit: its tokens and the context, naming the option and the flag. */
export function contextFull(promptTokens: number, contextSize: number): BmoeError {
  return new BmoeError(
    'E_CONTEXT_FULL',
    `the prompt is ${promptTokens} tokens but the context holds ${contextSize} (contextSize, --ctx-size)`,
  );
}
