// THE option table: every option of loadModel / createSession / generate, once. Each row says
// where the option lives in the API, its `bmoe run` flag, its key in the native binding's
// parameter objects, what values it takes, its default and its help. Derived from it: the zod
// schemas (../options.ts), the native parameter objects (./native.ts), the flags of `bmoe run` and
// `bmoe serve` (@bmoe/cli model-options.ts) and the flag table of docs/cli.md, the naming of option
// errors in flags (./errors.ts), options → flags (./flags.ts). Pure data: no zod, nothing native.
//
// What crosses into C++ is not written here: a row names its native key, and the range C++
// accepts and the default come from core-native's contract (NATIVE_PARAMS, generated with the C++
// constants from contract/params.mjs). A row narrows the API's range where the API says less
// (maxTokens ≥ 1) and says its own default where JS decides (threads, the cache ceiling).
import { NATIVE_CONSTANTS, NATIVE_PARAMS } from '@bmoe/core-native/contract';
import type { ValueSpec } from './values.js';

/**
 * Where an option applies: `context` (loadModel and createSession), `model` and `stream`
 * (loadModel; stream = `LoadOptions.stream`), `generate` (generate/chat), `session` (createSession).
 */
export type OptionGroup = 'context' | 'model' | 'stream' | 'generate' | 'session';

/**
 * The binding's parameter object an option travels in: `model` = NativeModelParams (loadModel),
 * `context` = NativeContextParams (createContext), `generate` = NativeGenerateRequest,
 * `prepare` = NativePrepareInput (the chat template).
 */
export type NativeParams = 'model' | 'context' | 'generate' | 'prepare';

export interface NativeKey {
  readonly params: NativeParams;
  /** Dotted path inside that object ('stream.ioThreads', 'sampling.topK'). */
  readonly key: string;
}

export interface OptionRow {
  /** The API path: 'threads', 'stream.ioThreads', 'maxTokens'. Also the name errors use. */
  readonly key: string;
  readonly group: OptionGroup;
  /**
   * The long flag of `bmoe run` / `bmoe serve`; null = API only. A boolean's flag sets false when it
   * starts with `--no-` ('--no-odirect'), else true (commander's rule, see `flagSets`).
   */
  readonly flag: string | null;
  /** The one-letter alias ('-t'). */
  readonly short?: string;
  /**
   * A boolean's second flag, setting the other value ('--no-moe-stream', '--no-overlap',
   * '--no-route-ahead'): where leaving both flags out lets something else decide (the settings
   * rule, or 'auto'), or the default is on, this is how to say the other thing.
   */
  readonly negation?: { readonly flag: string; readonly help: string };
  /** The flag's argument as help shows it ('N', 'N|auto'); value flags only. */
  readonly arg?: string;
  /** Where the value goes in the binding; null = used in JS only. */
  readonly native: NativeKey | null;
  readonly value: ValueSpec;
  /** The default; null = unset (e.g. the model's own top-k); 'computed' = decided at resolve time (see defaultText). */
  readonly default: number | string | boolean | null | 'computed';
  /** The default as help and the README say it. */
  readonly defaultText: string;
  /** One line for `--help` and the README (CLI words: it may name other flags). */
  readonly help: string;
}

const C = NATIVE_PARAMS;

interface Ranged {
  readonly default: number;
  readonly min: number;
  readonly max: number;
}

/** An integer row's value and default: the contract's range and default, the API's range narrowed by `narrow`. */
function int(f: Ranged, narrow: { min?: number; unit?: string } = {}) {
  const value = { type: 'int', min: Math.max(f.min, narrow.min ?? f.min), max: f.max, ...(narrow.unit ? { unit: narrow.unit } : {}) } as const;
  return { value, default: f.default, defaultText: String(f.default) };
}

/** A bounded number row's value and default, as the contract has them. */
function num(f: Ranged) {
  return { value: { type: 'number', min: f.min, max: f.max } as const, default: f.default, defaultText: String(f.default) };
}

const bool = { type: 'bool' } as const;
const tri = { type: 'bool', orAuto: true } as const;

export const OPTION_TABLE = [
  // ---- context: loadModel and createSession ---------------------------------------------------
  {
    key: 'threads', group: 'context', flag: '--threads', short: '-t', arg: 'N', native: { params: 'context', key: 'threads' },
    ...int(C.context.threads), default: 'computed', defaultText: 'min(4, cores)',
    help: 'compute threads',
  },
  // llama.cpp refuses a context below 16 tokens, and so does the API.
  {
    key: 'contextSize', group: 'context', flag: '--ctx-size', short: '-c', arg: 'N', native: { params: 'context', key: 'nCtx' },
    ...int(C.context.nCtx),
    help: 'context (KV cache) size in tokens',
  },
  {
    key: 'batchSize', group: 'context', flag: '--batch-size', short: '-b', arg: 'N', native: { params: 'context', key: 'nBatch' },
    ...int(C.context.nBatch),
    help: 'logical batch for prompt processing',
  },
  {
    key: 'ubatchSize', group: 'context', flag: '--ubatch-size', arg: 'N', native: { params: 'context', key: 'nUbatch' },
    ...int(C.context.nUbatch), defaultText: `min(${C.context.nUbatch.default}, batch size)`,
    help: 'physical micro-batch, at most the batch size',
  },
  // ---- model: loadModel -------------------------------------------------------------------------
  {
    key: 'repack', group: 'model', flag: '--repack', native: { params: 'model', key: 'repack' },
    negation: { flag: '--no-repack', help: 'no weight repacking (llama.cpp -nr): the plain kernels, results as llama-completion -nr' },
    value: bool, default: C.model.repack.default, defaultText: 'on, as llama.cpp (off for a resident model bigger than memory)',
    help: "let ggml repack weights into its faster CPU layouts, llama.cpp's default (rounds as llama-completion without -nr; streamed experts are repacked as they are read)",
  },
  {
    key: 'hugePages', group: 'model', flag: '--no-huge-pages', native: { params: 'model', key: 'hugePages' },
    value: bool, default: C.model.hugePages.default, defaultText: 'on (where THP is madvise or always)',
    help: "no transparent huge pages for the weights a resident load copies into memory (repacked layouts) and for the expert cache; on by default, which llama.cpp does not do: fewer TLB misses per token",
  },
  {
    key: 'useMmap', group: 'model', flag: null, native: { params: 'model', key: 'useMmap' },
    value: bool, default: C.model.useMmap.default, defaultText: 'on',
    help: 'map the file rather than reading it into memory',
  },
  // Read in JS (checked as a projector GGUF), then loaded natively beside the model (loadProjector).
  {
    key: 'mmproj', group: 'model', flag: '--mmproj', arg: 'FILE', native: null,
    value: { type: 'string' }, default: 'auto', defaultText: "auto: an mmproj*.gguf beside the model, if there is one",
    help: "the image projector (mmproj GGUF) of a vision model; 'auto' takes the mmproj*.gguf beside the model, 'none' loads none",
  },
  // Checked against the model's expert count once the header is read (inspect.ts); travels as a kv override.
  {
    key: 'nExpertUsed', group: 'model', flag: '--n-expert-used', arg: 'K', native: { params: 'model', key: 'kvOverrides.<arch>.expert_used_count' },
    value: { type: 'int', min: 1 }, default: null, defaultText: "the model's",
    help: "override the model's top-k routing (lossy: changes the text)",
  },
  // ---- stream: LoadOptions.stream (the flags of --moe-stream) -----------------------------------
  {
    key: 'stream.moeStream', group: 'stream', flag: '--moe-stream', native: { params: 'model', key: 'stream' },
    // The API default is off; the CLI's is the settings rule (settings.ts), which the help says.
    negation: { flag: '--no-moe-stream', help: 'hold the model resident even where the settings rule would stream it' },
    value: bool, default: false, defaultText: 'chosen: on when the model does not fit',
    help: 'stream the routed experts from the file instead of holding the model resident',
  },
  {
    key: 'stream.cacheMb', group: 'stream', flag: '--cache-mb', arg: 'N|auto', native: { params: 'model', key: 'stream.cacheMb' },
    value: { type: 'int', min: C.stream.cacheMb.min, max: C.stream.cacheMb.max, unit: 'MiB', orAuto: true }, default: C.stream.cacheMb.default, defaultText: String(C.stream.cacheMb.default),
    help: `expert cache budget in MiB (0 = no cache); 'auto' = what MemAvailable and the memory cgroup leave above a ${NATIVE_CONSTANTS.cacheFloorMb} MiB floor`,
  },
  // C++ reads 0 as none; the API says none by leaving it out (null), so a ceiling is at least 1.
  {
    key: 'stream.cacheCeilMb', group: 'stream', flag: '--cache-ceil-mb', arg: 'N', native: { params: 'model', key: 'stream.cacheCeilMb' },
    ...int(C.stream.cacheCeilMb, { min: 1 }), default: null, defaultText: 'none',
    help: 'ceiling for --cache-mb auto, in MiB',
  },
  {
    key: 'stream.ioThreads', group: 'stream', flag: '--io-threads', arg: 'N', native: { params: 'model', key: 'stream.ioThreads' },
    ...int(C.stream.ioThreads),
    help: 'parallel read lanes, each with its own descriptor',
  },
  // Tri-states: --overlap / --route-ahead force them, --no-overlap / --no-route-ahead forbid them,
  // neither (or 'auto') lets the streamer measure every allowed combination of the two and keep
  // the fastest (core-native stream/decode_choice.h).
  {
    key: 'stream.overlap', group: 'stream', flag: '--overlap', native: { params: 'model', key: 'stream.overlap' },
    negation: { flag: '--no-overlap', help: "never overlap: read each layer's experts, then compute them (serial)" },
    value: tri, default: C.stream.overlap.default, defaultText: 'auto (measured)',
    help:
      "always hide each layer's expert reads behind its expert compute; auto (neither flag) times one-token decodes in every allowed " +
      'combination of overlap and route-ahead, round robin, as long as the noise needs (3 to 12 each), keeps the fastest (overlap only where faster), and measures again every 128 tokens',
  },
  {
    key: 'stream.prefetch', group: 'stream', flag: '--prefetch', arg: 'N', native: { params: 'model', key: 'stream.prefetch' },
    ...int(C.stream.prefetch),
    help: 'read ahead the N most popular experts of the next layer; 0 = off',
  },
  {
    key: 'stream.routeAhead', group: 'stream', flag: '--route-ahead', native: { params: 'model', key: 'stream.routeAhead' },
    negation: { flag: '--no-route-ahead', help: "never read ahead on the next MoE layer's predicted routing" },
    value: tri, default: C.stream.routeAhead.default, defaultText: 'auto (measured)',
    help:
      "always read the experts the next MoE layer's router predicts from this layer's hidden state while this layer computes " +
      '(lossless: the real routing still decides; costs top-k extra cache slots); auto (neither flag) measures it against the other ' +
      'combinations of overlap and route-ahead (see --overlap) and keeps it only where faster',
  },
  {
    key: 'stream.odirect', group: 'stream', flag: '--no-odirect', native: { params: 'model', key: 'stream.odirect' },
    value: bool, default: C.stream.odirect.default, defaultText: 'O_DIRECT on',
    help: 'read experts through the page cache instead of O_DIRECT',
  },
  {
    key: 'stream.denseWeights', group: 'stream', flag: '--dense-weights', arg: 'mmap|anon', native: { params: 'model', key: 'stream.denseWeights' },
    value: { type: 'enum', values: C.stream.denseWeights.values }, default: C.stream.denseWeights.default, defaultText: C.stream.denseWeights.default,
    help: 'hold the non-expert weights in the file mapping or in anonymous memory',
  },
  {
    key: 'stream.forceCache', group: 'stream', flag: '--force-cache', native: { params: 'model', key: 'stream.forceCache' },
    value: bool, default: C.stream.forceCache.default, defaultText: 'off',
    help: "accept a cache budget below one token's routed working set (which LRU can never hit)",
  },
  // ---- generate: Session.generate / chat -------------------------------------------------------
  {
    key: 'maxTokens', group: 'generate', flag: '--n-predict', short: '-n', arg: 'N', native: { params: 'generate', key: 'maxTokens' },
    ...int(C.generate.maxTokens, { min: 1 }),
    help: 'tokens to generate',
  },
  {
    key: 'temperature', group: 'generate', flag: '--temp', arg: 'T', native: { params: 'generate', key: 'sampling.temperature' },
    value: { type: 'number', min: 0 }, default: C.sampling.temperature.default, defaultText: String(C.sampling.temperature.default),
    help: 'temperature; 0 = greedy',
  },
  {
    key: 'topK', group: 'generate', flag: '--top-k', arg: 'K', native: { params: 'generate', key: 'sampling.topK' },
    ...int(C.sampling.topK),
    help: 'top-k sampling; 0 = off',
  },
  {
    key: 'topP', group: 'generate', flag: '--top-p', arg: 'P', native: { params: 'generate', key: 'sampling.topP' },
    value: { type: 'number', min: 0, minExclusive: true, max: 1 }, default: C.sampling.topP.default, defaultText: String(C.sampling.topP.default),
    help: 'top-p (nucleus) sampling',
  },
  {
    key: 'seed', group: 'generate', flag: '--seed', arg: 'S', native: { params: 'generate', key: 'sampling.seed' },
    ...int(C.sampling.seed),
    help: 'sampler seed',
  },
  {
    key: 'minP', group: 'generate', flag: '--min-p', arg: 'P', native: { params: 'generate', key: 'sampling.minP' },
    ...num(C.sampling.minP),
    help: 'min-p sampling: drop tokens less likely than P times the most likely one; 0 = off',
  },
  {
    key: 'repeatPenalty', group: 'generate', flag: '--repeat-penalty', arg: 'N', native: { params: 'generate', key: 'sampling.repeatPenalty' },
    ...num(C.sampling.repeatPenalty),
    help: 'penalize tokens repeated within the last --repeat-last-n (prompt included); 1 = off',
  },
  // llama.cpp's sampler reads -1 as the whole context (llama-server's repeat_last_n).
  {
    key: 'repeatLastN', group: 'generate', flag: '--repeat-last-n', arg: 'N', native: { params: 'generate', key: 'sampling.repeatLastN' },
    ...int(C.sampling.repeatLastN),
    help: 'tokens --repeat-penalty and the presence/frequency penalties look back over; 0 = off, -1 = the context size',
  },
  {
    key: 'presencePenalty', group: 'generate', flag: '--presence-penalty', arg: 'N', native: { params: 'generate', key: 'sampling.presencePenalty' },
    ...num(C.sampling.presencePenalty),
    help: 'subtract N from the logit of every token already seen (OpenAI presence_penalty); 0 = off',
  },
  {
    key: 'frequencyPenalty', group: 'generate', flag: '--frequency-penalty', arg: 'N', native: { params: 'generate', key: 'sampling.frequencyPenalty' },
    ...num(C.sampling.frequencyPenalty),
    help: 'subtract N times its count from the logit of every token already seen (OpenAI frequency_penalty); 0 = off',
  },
  // llama-server's --reasoning-budget / reasoning_budget_tokens (common/reasoning-budget.cpp):
  // counted from the template's start tag, then its end tag is forced.
  {
    key: 'reasoningBudget', group: 'generate', flag: '--reasoning-budget', arg: 'N', native: { params: 'generate', key: 'sampling.reasoningBudget' },
    ...int(C.sampling.reasoningBudget), defaultText: '-1 (unlimited; half of -n when a tool call or JSON is forced)',
    help: "tokens the template's reasoning may take before its end is forced (llama.cpp --reasoning-budget); 0 = none, -1 = unlimited, except that a forced tool call or JSON schema bounds it to half of -n",
  },
  {
    key: 'reasoningBudgetMessage', group: 'generate', flag: '--reasoning-budget-message', arg: 'MSG', native: { params: 'generate', key: 'sampling.reasoningBudgetMessage' },
    value: { type: 'string' }, default: null, defaultText: 'none',
    help: 'text written before the forced end of the reasoning when the budget runs out (llama.cpp --reasoning-budget-message)',
  },
  {
    key: 'contextShift', group: 'generate', flag: '--context-shift', native: { params: 'generate', key: 'contextShift' },
    value: bool, default: C.generate.contextShift.default, defaultText: 'off',
    help: 'when the context fills, drop the older half of it and go on (llama.cpp --context-shift) instead of stopping',
  },
  {
    key: 'chatml', group: 'generate', flag: '--chatml', native: { params: 'prepare', key: 'chatml' },
    value: bool, default: C.chatFormat.chatml.default, defaultText: 'off',
    help: "format the prompt as one user message with ChatML instead of the GGUF's own template",
  },
  {
    key: 'think', group: 'generate', flag: '--no-think', native: { params: 'prepare', key: 'think' },
    value: bool, default: C.chatFormat.think.default, defaultText: 'thinking on',
    help: 'turn the template\'s reasoning off (Qwen3 thinking; gpt-oss answers on its final channel); implies --chat',
  },
  {
    key: 'logprobs', group: 'generate', flag: null, native: { params: 'generate', key: 'nProbs' },
    ...int(C.generate.nProbs, { min: 0 }), default: null, defaultText: 'none',
    help: "give each token event its log-probability and this many of the most likely tokens' at its position (0..20; OpenAI logprobs / top_logprobs)",
  },
  {
    key: 'promptLogprobs', group: 'generate', flag: null, native: { params: 'generate', key: 'promptLogprobs' },
    value: bool, default: C.generate.promptLogprobs.default, defaultText: 'off',
    help: "score the prompt too: the result's promptLogprobs (the whole prompt is evaluated again; OpenAI completions echo + logprobs)",
  },
  {
    key: 'logits', group: 'generate', flag: null, native: { params: 'generate', key: 'logits' },
    value: bool, default: C.generate.logits.default, defaultText: 'off',
    help: "attach each sampled position's logits to its token event (tests)",
  },
  // ---- session: createSession -------------------------------------------------------------------
  {
    key: 'system', group: 'session', flag: null, native: null,
    value: { type: 'string' }, default: null, defaultText: 'none',
    help: 'a system message put first in every chat() turn',
  },
  {
    key: 'state', group: 'session', flag: null, native: null,
    value: { type: 'string' }, default: null, defaultText: 'none',
    help: "a state file session.save() wrote: the session resumes that conversation",
  },
  {
    key: 'prepareTurns', group: 'session', flag: null, native: null,
    value: bool, default: false, defaultText: 'off',
    help: "when a chat generation ends, evaluate what the next turn starts with (the answer as the template renders it back) while the client is away",
  },
] as const satisfies readonly OptionRow[];

type Row = (typeof OPTION_TABLE)[number];

/** Every option's key ('threads', 'stream.ioThreads', ...). */
export type OptionKey = Row['key'];

/** The native keys of the rows that travel in the binding's `params` object ('stream.ioThreads', 'nCtx', ...). */
export type NativeKeysOf<P extends NativeParams> = Extract<Row, { native: { params: P } }>['native']['key'];

/** The keys of a group's rows. */
export type ApiKeysOf<G extends OptionGroup> = Extract<Row, { group: G }>['key'];

const BY_KEY = new Map<string, OptionRow>(OPTION_TABLE.map((r) => [r.key, r]));
const BY_FLAG = new Map<string, OptionRow>(
  (OPTION_TABLE as readonly OptionRow[]).flatMap((r): Array<[string, OptionRow]> => [
    ...(r.flag ? ([[r.flag, r]] as Array<[string, OptionRow]>) : []),
    ...(r.negation ? ([[r.negation.flag, r]] as Array<[string, OptionRow]>) : []),
  ]),
);

/** The value a boolean row's flag sets: false for '--no-…' ('--no-odirect', '--no-overlap'), else true (as commander reads it). */
export function flagSets(flag: string): boolean {
  return !flag.startsWith('--no-');
}

/** The flag of a boolean row that sets `value` (its flag or its negation), if it has one ('auto' has none). */
export function boolFlagFor(row: OptionRow, value: unknown): string | undefined {
  if (typeof value !== 'boolean') return undefined;
  return [row.flag, row.negation?.flag].find((f): f is string => !!f && flagSets(f) === value);
}

/** The row of `key`; throws for a key not in the table (a programming error, not a user's). */
export function optionRow(key: OptionKey): OptionRow {
  const row = BY_KEY.get(key);
  if (!row) throw new Error(`no option '${key}' in the option table`);
  return row;
}

/** The row of a key, or undefined for a name that is not an option. */
export function findOption(key: string): OptionRow | undefined {
  return BY_KEY.get(key);
}

/** The row whose long flag (or negation flag: '--no-moe-stream') is `flag` ('--io-threads'), if any. */
export function optionByFlag(flag: string): OptionRow | undefined {
  return BY_FLAG.get(flag);
}

/** The rows of some groups, in table order. */
export function optionRows(groups: readonly OptionGroup[]): OptionRow[] {
  return OPTION_TABLE.filter((r: OptionRow) => groups.includes(r.group));
}

/** The key's last segment: the property name inside its options object ('stream.ioThreads' → 'ioThreads'). */
export function leafKey(key: string): string {
  return key.slice(key.lastIndexOf('.') + 1);
}

/** The value at a dotted path of a plain object (undefined where a step is missing). */
export function getPath(root: unknown, path: string): unknown {
  let v = root;
  for (const k of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/** Sets a dotted path of a plain object, creating the objects on the way. */
export function setPath(root: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = root;
  for (const k of keys.slice(0, -1)) {
    const next = o[k];
    if (next === null || typeof next !== 'object') o[k] = {};
    o = o[k] as Record<string, unknown>;
  }
  o[keys[keys.length - 1]!] = value;
}

/** The contract's group of a native key: which object of NATIVE_PARAMS holds it. */
function contractGroup(n: NativeKey): keyof typeof NATIVE_PARAMS {
  if (n.params === 'context') return 'context';
  if (n.params === 'prepare') return 'chatFormat';
  if (n.params === 'generate') return n.key.startsWith('sampling.') ? 'sampling' : 'generate';
  return n.key.startsWith('stream.') ? 'stream' : 'model';
}

/** One field of core-native's contract (binding/contract.ts): its type, default and the range C++ accepts. */
export type ContractField = { readonly type: string; readonly default: unknown; readonly min?: number; readonly max?: number; readonly values?: readonly string[] };

/**
 * The contract's field behind a row's native key (undefined for a kv override: top-k travels as
 * a GGUF override, which llama.cpp checks against the model).
 */
export function contractField(n: NativeKey): ContractField | undefined {
  if (n.key.startsWith('kvOverrides.')) return undefined;
  const group = NATIVE_PARAMS[contractGroup(n)] as Record<string, ContractField>;
  return group[leafKey(n.key)];
}
