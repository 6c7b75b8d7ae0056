// A checked request body → what to generate. Every bound a request can hit is checked here or in
// its schema, once, before it waits for the model: each refusal is a 400 naming the field.
import { randomBytes } from 'node:crypto';
import type { ChatMessage, GenerateOptions } from '@bmoe/engine';
import type { ServerCore } from './core.js';
import { ApiError } from './errors.js';
import { NATIVE_MAX_COUNT, checkPrompt } from './limits.js';
import type { GenerationSpec } from './respond.js';
import type { ChatCompletionBody, CompletionBody } from './schemas.js';

/** 404 for a model name this server does not serve (no name = the one it serves). */
export function checkModelName(core: ServerCore, name: string | undefined, param: string): void {
  if (name === undefined || name === core.opts.modelId) return;
  throw new ApiError(404, 'invalid_request_error', `the model '${name}' does not exist; this server serves '${core.opts.modelId}'`, 'model_not_found', param);
}

function checkInput(core: ServerCore, texts: readonly string[], param: 'messages' | 'prompt'): void {
  const refused = checkPrompt(texts, param, core.limits, core.contextSize());
  if (refused) throw refused;
}

export function chatSpec(core: ServerCore, b: ChatCompletionBody): GenerationSpec {
  checkModelName(core, b.model, 'model');
  const messages: ChatMessage[] = b.messages.map((m) => ({
    // Templates know system/user/assistant/tool; OpenAI's newer 'developer' is the system role.
    role: m.role === 'developer' ? 'system' : m.role,
    content: typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text).join('\n'),
  }));
  checkInput(
    core,
    messages.map((m) => m.content),
    'messages',
  );
  return {
    endpoint: '/v1/chat/completions',
    input: messages,
    generate: generateOptions(core, b, b.max_completion_tokens ?? b.max_tokens ?? null),
    stop: stopList(b.stop),
    stream: b.stream === true,
    inputParam: 'messages',
  };
}

export function completionSpec(core: ServerCore, b: CompletionBody): GenerationSpec {
  checkModelName(core, b.model, 'model');
  const prompt = typeof b.prompt === 'string' ? b.prompt : (b.prompt[0] ?? '');
  checkInput(core, [prompt], 'prompt');
  return {
    endpoint: '/v1/completions',
    input: prompt,
    // OpenAI's legacy completions default to 16 tokens.
    generate: generateOptions(core, b, b.max_tokens ?? 16),
    stop: stopList(b.stop),
    stream: b.stream === true,
    inputParam: 'prompt',
  };
}

/**
 * Request fields → engine options. Defaults: until end of generation or a full context
 * (max tokens), temperature 1 (OpenAI's), the engine's top-k/top-p; without `seed`, a sampled
 * (temperature > 0) request gets a random seed so asking twice gives two answers.
 */
function generateOptions(core: ServerCore, b: ChatCompletionBody | CompletionBody, maxTokens: number | null): Omit<GenerateOptions, 'signal'> {
  const temperature = b.temperature ?? 1;
  const out: Omit<GenerateOptions, 'signal'> = {
    maxTokens: maxTokens ?? Math.min(core.contextSize(), NATIVE_MAX_COUNT),
    temperature,
  };
  if (b.top_p !== undefined && b.top_p !== null) out.topP = b.top_p;
  if (b.top_k !== undefined && b.top_k !== null) out.topK = b.top_k;
  if (b.seed !== undefined && b.seed !== null) out.seed = b.seed;
  else if (temperature > 0) out.seed = randomBytes(4).readUInt32LE(0);
  return out;
}

function stopList(stop: string | string[] | null | undefined): string[] {
  if (stop === undefined || stop === null) return [];
  return typeof stop === 'string' ? [stop] : stop;
}
