// THE option table: every option of loadModel / createSession / generate, once. Each row says
// where the option lives in the API, its `bmoe run` flag, its key in the native binding's
// parameter objects, what values it takes, its default and its help. Derived from it: the zod
// schemas (../options.ts), the native parameter objects (./native.ts), the flags of `bmoe run` and
// `bmoe serve` (@bmoe/cli model-options.ts) and the README's flag table, the naming of option
// errors in flags (./errors.ts), options → flags (./flags.ts). Pure data: no zod, nothing native.
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
  /** What C++ accepts where it differs from the API's range (the API is then the narrower one). */
  readonly min?: number;
  readonly max?: number;
  /** The native value meaning "none" for an option whose API default is null (cacheCeilMb: 0). */
  readonly none?: number;
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
  /** False for a value the JS API does not expose (a C++ constant): listed so JS and C++ are checked to agree. */
  readonly api?: false;
}

const MiB_MAX = 2 ** 24; // 16 TiB in MiB: what C++ accepts for a cache size
const int = (min: number, max?: number) => ({ type: 'int', min, ...(max === undefined ? {} : { max }) }) as const;
const bool = { type: 'bool' } as const;
/** An additive penalty: llama.cpp takes any finite number; C++ bounds it where it stays meaningful. */
const PENALTY = { type: 'number', min: -1e6, max: 1e6 } as const;

export const OPTION_TABLE = [
  // ---- context: loadModel and createSession ---------------------------------------------------
  {
    key: 'threads', group: 'context', flag: '--threads', short: '-t', arg: 'N', native: { params: 'context', key: 'threads' },
    value: int(1, 1024), default: 'computed', defaultText: 'min(4, cores)',
    help: 'compute threads',
  },
  // C++ (llama.cpp) refuses a context below 16 tokens; the API has accepted any positive size.
  {
    key: 'contextSize', group: 'context', flag: '--ctx-size', short: '-c', arg: 'N', native: { params: 'context', key: 'nCtx', min: 16 },
    value: int(1, 2 ** 20), default: 4096, defaultText: '4096',
    help: 'context (KV cache) size in tokens',
  },
  {
    key: 'batchSize', group: 'context', flag: '--batch-size', short: '-b', arg: 'N', native: { params: 'context', key: 'nBatch' },
    value: int(1, 2 ** 16), default: 512, defaultText: '512',
    help: 'logical batch for prompt processing',
  },
  {
    key: 'ubatchSize', group: 'context', flag: '--ubatch-size', arg: 'N', native: { params: 'context', key: 'nUbatch' },
    value: int(1, 2 ** 16), default: 512, defaultText: 'min(512, batch size)',
    help: 'physical micro-batch, at most the batch size',
  },
  // ---- model: loadModel -------------------------------------------------------------------------
  {
    key: 'repack', group: 'model', flag: '--repack', native: { params: 'model', key: 'repack' },
    value: bool, default: false, defaultText: 'off',
    help: "let ggml repack weights, llama.cpp's default (faster; rounds as llama-completion without -nr; streamed experts are repacked as they are read)",
  },
  {
    key: 'useMmap', group: 'model', flag: null, native: { params: 'model', key: 'useMmap' },
    value: bool, default: true, defaultText: 'on',
    help: 'map the file rather than reading it into memory',
  },
  // Checked against the model's expert count once the header is read (inspect.ts); travels as a kv override.
  {
    key: 'nExpertUsed', group: 'model', flag: '--n-expert-used', arg: 'K', native: { params: 'model', key: 'kvOverrides.<arch>.expert_used_count' },
    value: int(1), default: null, defaultText: "the model's",
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
    value: { type: 'int', min: 0, max: MiB_MAX, unit: 'MiB', orAuto: true }, default: 0, defaultText: '0',
    help: "expert cache budget in MiB (0 = no cache); 'auto' = what MemAvailable and the memory cgroup leave above a 1 GiB floor",
  },
  {
    key: 'stream.cacheCeilMb', group: 'stream', flag: '--cache-ceil-mb', arg: 'N', native: { params: 'model', key: 'stream.cacheCeilMb', min: 0, none: 0 },
    value: int(1, MiB_MAX), default: null, defaultText: 'none',
    help: 'ceiling for --cache-mb auto, in MiB',
  },
  {
    key: 'stream.ioThreads', group: 'stream', flag: '--io-threads', arg: 'N', native: { params: 'model', key: 'stream.ioThreads' },
    value: int(1, 64), default: 4, defaultText: '4',
    help: 'parallel read lanes, each with its own descriptor',
  },
  // Tri-states: --overlap / --route-ahead force them, --no-overlap / --no-route-ahead forbid them,
  // neither (or 'auto') lets the streamer measure every allowed combination of the two and keep
  // the fastest (core-native stream/decode_choice.h).
  {
    key: 'stream.overlap', group: 'stream', flag: '--overlap', native: { params: 'model', key: 'stream.overlap' },
    negation: { flag: '--no-overlap', help: "never overlap: read each layer's experts, then compute them (serial)" },
    value: { type: 'bool', orAuto: true }, default: 'auto', defaultText: 'auto (measured)',
    help:
      "always hide each layer's expert reads behind its expert compute; auto (neither flag) times one-token decodes in every allowed " +
      'combination of overlap and route-ahead, round robin, as long as the noise needs (3 to 12 each), keeps the fastest (overlap only where faster), and measures again every 128 tokens',
  },
  {
    key: 'stream.prefetch', group: 'stream', flag: '--prefetch', arg: 'N', native: { params: 'model', key: 'stream.prefetch' },
    value: int(0, 64), default: 0, defaultText: '0',
    help: 'read ahead the N most popular experts of the next layer; 0 = off',
  },
  {
    key: 'stream.routeAhead', group: 'stream', flag: '--route-ahead', native: { params: 'model', key: 'stream.routeAhead' },
    negation: { flag: '--no-route-ahead', help: "never read ahead on the next MoE layer's predicted routing" },
    value: { type: 'bool', orAuto: true }, default: 'auto', defaultText: 'auto (measured)',
    help:
      "always read the experts the next MoE layer's router predicts from this layer's hidden state while this layer computes " +
      '(lossless: the real routing still decides; costs top-k extra cache slots); auto (neither flag) measures it against the other ' +
      'combinations of overlap and route-ahead (see --overlap) and keeps it only where faster',
  },
  {
    key: 'stream.odirect', group: 'stream', flag: '--no-odirect', native: { params: 'model', key: 'stream.odirect' },
    value: bool, default: true, defaultText: 'O_DIRECT on',
    help: 'read experts through the page cache instead of O_DIRECT',
  },
  {
    key: 'stream.denseWeights', group: 'stream', flag: '--dense-weights', arg: 'mmap|anon', native: { params: 'model', key: 'stream.denseWeights' },
    value: { type: 'enum', values: ['mmap', 'anon'] }, default: 'mmap', defaultText: 'mmap',
    help: 'hold the non-expert weights in the file mapping or in anonymous memory',
  },
  {
    key: 'stream.forceCache', group: 'stream', flag: '--force-cache', native: { params: 'model', key: 'stream.forceCache' },
    value: bool, default: false, defaultText: 'off',
    help: "accept a cache budget below one token's routed working set (which LRU can never hit)",
  },
  // Not an option: the floor `cacheMb: 'auto'` leaves, a C++ constant (stream_config.h), listed so
  // the help's "1 GiB floor" and C++ are checked to agree.
  {
    key: 'stream.cacheFloorMb', group: 'stream', api: false, flag: null, native: null,
    value: int(0, MiB_MAX), default: 1024, defaultText: '1024',
    help: 'MemAvailable that --cache-mb auto leaves to the system, in MiB (fixed in C++)',
  },
  // ---- generate: Session.generate / chat -------------------------------------------------------
  {
    key: 'maxTokens', group: 'generate', flag: '--n-predict', short: '-n', arg: 'N', native: { params: 'generate', key: 'maxTokens', min: 0 },
    value: int(1, 2 ** 24), default: 256, defaultText: '256',
    help: 'tokens to generate',
  },
  {
    key: 'temperature', group: 'generate', flag: '--temp', arg: 'T', native: { params: 'generate', key: 'sampling.temperature' },
    value: { type: 'number', min: 0 }, default: 0, defaultText: '0',
    help: 'temperature; 0 = greedy',
  },
  {
    key: 'topK', group: 'generate', flag: '--top-k', arg: 'K', native: { params: 'generate', key: 'sampling.topK' },
    value: int(0, 2 ** 24), default: 40, defaultText: '40',
    help: 'top-k sampling; 0 = off',
  },
  {
    key: 'topP', group: 'generate', flag: '--top-p', arg: 'P', native: { params: 'generate', key: 'sampling.topP' },
    value: { type: 'number', min: 0, minExclusive: true, max: 1 }, default: 0.95, defaultText: '0.95',
    help: 'top-p (nucleus) sampling',
  },
  {
    key: 'seed', group: 'generate', flag: '--seed', arg: 'S', native: { params: 'generate', key: 'sampling.seed' },
    value: int(0, 0xffffffff), default: 0, defaultText: '0',
    help: 'sampler seed',
  },
  {
    key: 'minP', group: 'generate', flag: '--min-p', arg: 'P', native: { params: 'generate', key: 'sampling.minP' },
    value: { type: 'number', min: 0, max: 1 }, default: 0, defaultText: '0',
    help: 'min-p sampling: drop tokens less likely than P times the most likely one; 0 = off',
  },
  {
    key: 'repeatPenalty', group: 'generate', flag: '--repeat-penalty', arg: 'N', native: { params: 'generate', key: 'sampling.repeatPenalty' },
    value: { type: 'number', min: 1e-6, max: 1e6 }, default: 1, defaultText: '1',
    help: 'penalize tokens repeated within the last --repeat-last-n (prompt included); 1 = off',
  },
  // llama.cpp's sampler reads -1 as the whole context (llama-server's repeat_last_n).
  {
    key: 'repeatLastN', group: 'generate', flag: '--repeat-last-n', arg: 'N', native: { params: 'generate', key: 'sampling.repeatLastN' },
    value: int(-1, 2 ** 24), default: 64, defaultText: '64',
    help: 'tokens --repeat-penalty and the presence/frequency penalties look back over; 0 = off, -1 = the context size',
  },
  {
    key: 'presencePenalty', group: 'generate', flag: '--presence-penalty', arg: 'N', native: { params: 'generate', key: 'sampling.presencePenalty' },
    value: PENALTY, default: 0, defaultText: '0',
    help: 'subtract N from the logit of every token already seen (OpenAI presence_penalty); 0 = off',
  },
  {
    key: 'frequencyPenalty', group: 'generate', flag: '--frequency-penalty', arg: 'N', native: { params: 'generate', key: 'sampling.frequencyPenalty' },
    value: PENALTY, default: 0, defaultText: '0',
    help: 'subtract N times its count from the logit of every token already seen (OpenAI frequency_penalty); 0 = off',
  },
  {
    key: 'contextShift', group: 'generate', flag: '--context-shift', native: { params: 'generate', key: 'contextShift' },
    value: bool, default: false, defaultText: 'off',
    help: 'when the context fills, drop the older half of it and go on (llama.cpp --context-shift) instead of stopping',
  },
  {
    key: 'chatml', group: 'generate', flag: '--chatml', native: { params: 'prepare', key: 'chatml' },
    value: bool, default: false, defaultText: 'off',
    help: "format the prompt as one user message with ChatML instead of the GGUF's own template",
  },
  {
    key: 'think', group: 'generate', flag: '--no-think', native: { params: 'prepare', key: 'think' },
    value: bool, default: true, defaultText: 'thinking on',
    help: 'turn the template\'s reasoning off (Qwen3 thinking; gpt-oss answers on its final channel); implies --chat',
  },
  {
    key: 'logits', group: 'generate', flag: null, native: { params: 'generate', key: 'logits' },
    value: bool, default: false, defaultText: 'off',
    help: "attach each sampled position's logits to its token event (tests)",
  },
  // ---- session: createSession -------------------------------------------------------------------
  {
    key: 'system', group: 'session', flag: null, native: null,
    value: { type: 'string' }, default: null, defaultText: 'none',
    help: 'a system message put first in every chat() turn',
  },
] as const satisfies readonly OptionRow[];

type Row = (typeof OPTION_TABLE)[number];

/** Every option's key ('threads', 'stream.ioThreads', ...). */
export type OptionKey = Row['key'];

/** The native keys of the rows that travel in the binding's `params` object ('stream.ioThreads', 'nCtx', ...). */
export type NativeKeysOf<P extends NativeParams> = Extract<Row, { native: { params: P } }>['native']['key'];

/** The keys of a group that the JS API exposes (rows with `api: false` left out). */
export type ApiKeysOf<G extends OptionGroup> = Exclude<Extract<Row, { group: G }>, { api: false }>['key'];

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

/** The rows of some groups, in table order; `api` rows only unless told otherwise. */
export function optionRows(groups: readonly OptionGroup[], opts: { includeNativeOnly?: boolean } = {}): OptionRow[] {
  return OPTION_TABLE.filter((r: OptionRow) => groups.includes(r.group) && (opts.includeNativeOnly || r.api !== false));
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

/** The range of an integer row as C++ must accept it: the API's unless the row's native key says otherwise. */
export interface NativeBound {
  /** The option's API key. */
  key: OptionKey;
  /** The binding's parameter object and the key in it ('model', 'stream.ioThreads'). */
  params: NativeParams;
  nativeKey: string;
  min: number;
  max: number;
  /** What C++ uses when the key is absent; null where the default is computed in JS (threads). */
  default: number | null;
}

/**
 * The native bounds of every integer option, from the table. C++ validates the same keys for
 * the direct API (addon/, stream/stream_config.cpp); a test compares the two.
 */
export function nativeBounds(): NativeBound[] {
  const out: NativeBound[] = [];
  for (const r of OPTION_TABLE as readonly OptionRow[]) {
    // Top-k travels as a GGUF kv override, which llama.cpp checks against the model.
    if (!r.native || r.value.type !== 'int' || r.native.key.startsWith('kvOverrides.')) continue;
    const def = typeof r.default === 'number' ? r.default : r.default === null ? (r.native.none ?? null) : null;
    out.push({
      key: r.key as OptionKey,
      params: r.native.params,
      nativeKey: r.native.key,
      min: r.native.min ?? r.value.min,
      max: r.native.max ?? r.value.max ?? Number.MAX_SAFE_INTEGER,
      default: def,
    });
  }
  return out;
}
