// What the pinned llama.cpp asserts about a model's shape instead of reporting it: a GGML_ASSERT
// aborts the whole process (a server, the demo), so a file that breaks one must be refused in
// JavaScript first. Each rule below names the llama.cpp line it mirrors (80fb11ac, under
// packages/core-native/deps/llama.cpp/src). What llama.cpp throws as an exception (a missing key,
// a tensor of the wrong shape) is left to it: those come back as a load error, not a crash.

import { GgufError } from './errors.js';
import { quoteName } from './quote.js';
import type { GgufFile } from './reader.js';
import { GgmlType, GgufValueType, ggmlType, ggufValueTypeName } from './types.js';
import type { GgufValue } from './values.js';

/** llama-hparams.h: LLAMA_MAX_LAYERS. */
export const LLAMA_MAX_LAYERS = 512;
/** llama-hparams.h: LLAMA_MAX_EXPERTS. */
export const LLAMA_MAX_EXPERTS = 1024;
/** llama-model.cpp: LLAMA_ROPE_SCALING_TYPES (anything else fails GGML_ASSERT in load_hparams). */
const ROPE_SCALING_TYPES: readonly string[] = ['none', 'linear', 'yarn', 'longrope'];

class Rules {
  constructor(readonly file: GgufFile) {}

  fail(key: string, problem: string): never {
    // Keys come from the file: shown as they are when short and plain, else quoted and bounded.
    const shown = /^[\x21-\x7e]{1,96}$/.test(key) ? key : quoteName(key);
    throw new GgufError(this.file.path, this.file.entries?.get(key)?.offset, `${shown} ${problem}`);
  }

  private describe(v: GgufValue): string {
    if (v.type === GgufValueType.ARRAY) return `an array of ${v.value.length} ${ggufValueTypeName(v.itemType)}`;
    const shown = typeof v.value === 'string' ? JSON.stringify(v.value.slice(0, 40)) : String(v.value);
    return `a ${ggufValueTypeName(v.type)} (${shown})`;
  }

  /** A key llama.cpp reads with get_key<uint32_t>: absent, or exactly a uint32. */
  u32(key: string): number | undefined {
    const v = this.file.kv.get(key);
    if (!v) return undefined;
    if (v.type !== GgufValueType.UINT32) this.fail(key, `is ${this.describe(v)}, but llama.cpp reads it as a uint32`);
    return v.value;
  }

  /** A bool key, or undefined. */
  bool(key: string): boolean | undefined {
    const v = this.file.kv.get(key);
    if (!v) return undefined;
    if (v.type !== GgufValueType.BOOL) this.fail(key, `is ${this.describe(v)}, but llama.cpp reads it as a bool`);
    return v.value;
  }

  /** A string key, or undefined. */
  str(key: string): string | undefined {
    const v = this.file.kv.get(key);
    if (!v) return undefined;
    if (v.type !== GgufValueType.STRING) this.fail(key, `is ${this.describe(v)}, but llama.cpp reads it as a string`);
    return v.value;
  }

  /**
   * A key read with get_key_or_arr into uint32 per layer: a uint32, or an array of uint32, int32
   * or bool with one item per layer (llama-model-loader.cpp get_arr); items as C++ sees them.
   */
  perLayer(key: string, layers: number): number[] | undefined {
    const v = this.file.kv.get(key);
    if (!v) return undefined;
    if (v.type !== GgufValueType.ARRAY) {
      const u = this.u32(key) ?? 0;
      return new Array<number>(layers).fill(u);
    }
    const it = v.itemType;
    if (it !== GgufValueType.UINT32 && it !== GgufValueType.INT32 && it !== GgufValueType.BOOL) {
      this.fail(key, `is ${this.describe(v)}, but llama.cpp reads a uint32 or an array of uint32, int32 or bool`);
    }
    if (v.value.length !== layers) this.fail(key, `has ${v.value.length} items, but the model has ${layers} layers`);
    return v.value.map((x) => (typeof x === 'boolean' ? Number(x) : Number(x) >>> 0));
  }
}

/**
 * Refuses, with a one-line GgufError naming the file and the key, a header that would make the
 * pinned llama.cpp abort the process while loading it or building its first graph: shape values
 * past its fixed limits (layers, experts), expert counts that contradict each other, a wrong value
 * type where llama.cpp's checks assume one, a duplicate vocabulary token, and metadata too large
 * for readGguf's budget (llama.cpp would hold all of it in memory, and this check could not see it).
 */
export function checkLlamaLimits(file: GgufFile): void {
  const r = new Rules(file);
  for (const [key, e] of file.entries ?? []) {
    if (!e.loaded) {
      const size = e.type === GgufValueType.ARRAY ? `${e.length} items` : `${e.length} bytes`;
      r.fail(key, `holds ${size}, more than bmoe reads from a header; llama.cpp would load all of it into memory`);
    }
  }
  const arch = r.str('general.architecture');
  if (arch === undefined) return; // llama.cpp reports a missing architecture itself
  const k = (name: string): string => `${arch}.${name}`;

  // llama-model.cpp load_hparams: GGML_ASSERT(n_layer_all > 0 && n_layer_all <= LLAMA_MAX_LAYERS)
  const layers = r.u32(k('block_count'));
  if (layers === undefined) return; // llama.cpp throws "key not found"
  if (layers < 1 || layers > LLAMA_MAX_LAYERS) r.fail(k('block_count'), `is ${layers}, llama.cpp allows 1 to ${LLAMA_MAX_LAYERS}`);
  const nextn = r.u32(k('nextn_predict_layers')) ?? 0;
  if (nextn > layers) r.fail(k('nextn_predict_layers'), `is ${nextn}, more than block_count ${layers}`);

  checkExperts(r, k, layers);

  const rope = r.str(k('rope.scaling.type'));
  if (rope !== undefined && !ROPE_SCALING_TYPES.includes(rope)) {
    r.fail(k('rope.scaling.type'), `is ${JSON.stringify(rope.slice(0, 40))}, llama.cpp knows ${ROPE_SCALING_TYPES.join(', ')}`);
  }
  checkHeadSizes(r, k, arch, layers);
  checkAttention(r, k, arch, layers, nextn);
  checkEpsilons(r, file, arch);
  checkVocab(r, file);
  checkTensorTypes(file);
}

/** Types ggml-cpu has no dot product for (ggml-cpu.c type_traits_cpu: no vec_dot). */
const NOT_COMPUTABLE = new Set<GgmlType>([GgmlType.Q8_1, GgmlType.Q8_K, GgmlType.I8, GgmlType.I16, GgmlType.I32, GgmlType.I64, GgmlType.F64]);
/** Integer lookup tables some architectures store (llama-arch.cpp: GET_ROWS-only tensors). */
const INTEGER_TABLES = /(^|\.)(ffn_gate_tid2eid|d2t)(\.|$)/;
const EXPERT_BIAS = /^blk\.\d+\.ffn_(gate|up|down|gate_up)_exps\.bias$/;

/**
 * Tensor types ggml aborts (or crashes) on when it computes: no tensor of a type ggml-cpu cannot
 * take a dot product with, 1-D tensors (norms, biases, scales, attention sinks) F32 as every
 * converter writes them (ggml_soft_max_ext's sinks and the binary ops assert it), and the expert
 * biases F32 (ggml_add_id asserts it). ggml-cpu's supports_op does not catch these at load.
 */
function checkTensorTypes(file: GgufFile): void {
  for (const t of file.tensors) {
    if (INTEGER_TABLES.test(t.name)) continue;
    const type = ggmlType(t.type).name;
    const fail = (why: string): never => {
      // A split model's tensor offsets are inside the shard that holds it: name that file.
      throw new GgufError(file.shards?.[t.shard ?? 0]?.path ?? file.path, t.offset, `tensor ${JSON.stringify(t.name)} has type ${type}: ${why}`);
    };
    if (NOT_COMPUTABLE.has(t.type)) fail(`llama.cpp's CPU backend cannot compute with it (it would crash)`);
    if (t.type !== GgmlType.F32 && t.dims.length === 1) fail('a 1-D tensor must be F32 (llama.cpp aborts otherwise)');
    if (t.type !== GgmlType.F32 && EXPERT_BIAS.test(t.name)) fail('expert biases must be F32 (llama.cpp aborts otherwise)');
  }
}

/** load_hparams: the asserts on n_expert, n_expert_used and the expert groups. */
function checkExperts(r: Rules, k: (name: string) => string, layers: number): void {
  const experts = r.u32(k('expert_count')) ?? 0;
  if (experts > LLAMA_MAX_EXPERTS) r.fail(k('expert_count'), `is ${experts}, llama.cpp allows at most ${LLAMA_MAX_EXPERTS}`);
  const used = r.perLayer(k('expert_used_count'), layers) ?? [];
  const maxUsed = used.reduce((m, x) => Math.max(m, x), 0);
  if (maxUsed > experts) r.fail(k('expert_used_count'), `is ${maxUsed}, more than expert_count ${experts}`);
  const groups = r.u32(k('expert_group_count')) ?? 0;
  const groupsUsed = r.u32(k('expert_group_used_count')) ?? 0;
  if (experts === 0) {
    if (groups !== 0) r.fail(k('expert_group_count'), `is ${groups}, but the model has no experts`);
    return;
  }
  if (maxUsed === 0) r.fail(k('expert_used_count'), `is 0 (or missing), but the model has ${experts} experts`);
  if (groups >= experts) r.fail(k('expert_group_count'), `is ${groups}, it must be less than expert_count ${experts}`);
  if (groups > 1) {
    if (experts % groups !== 0) r.fail(k('expert_group_count'), `is ${groups}, which does not divide expert_count ${experts}`);
    if (groupsUsed === 0 || groupsUsed >= groups) {
      r.fail(k('expert_group_used_count'), `is ${groupsUsed}, it must be from 1 to expert_group_count ${groups} - 1`);
    }
  }
}

/**
 * Head sizes the graph builders assert on, with load_hparams' defaults (n_embd / n_head; the SWA
 * sizes default to the full ones): rope rotates an even number of dimensions, at most a head
 * (ggml-cpu ops.cpp rope: n_dims <= ne0, n_dims % 2 == 0); models/qwen3moe.cpp needs
 * n_embd_head_k == n_embd_head_v == n_rot, models/gemma4.cpp n_embd_head_k(il) == n_embd_head_v(il).
 */
function checkHeadSizes(r: Rules, k: (name: string) => string, arch: string, layers: number): void {
  const heads = r.perLayer(k('attention.head_count'), layers)?.[0] ?? 0;
  if (heads === 0) return;
  const embd = r.u32(k('embedding_length')) ?? 0;
  const headK = r.u32(k('attention.key_length')) ?? Math.floor(embd / heads);
  const headV = r.u32(k('attention.value_length')) ?? Math.floor(embd / heads);
  const swaK = r.u32(k('attention.key_length_swa')) ?? headK;
  const swaV = r.u32(k('attention.value_length_swa')) ?? headV;
  const rot = r.u32(k('rope.dimension_count')) ?? headK;
  const rotSwa = r.u32(k('rope.dimension_count_swa')) ?? rot;
  const equal = (key: string, a: number, other: string, b: number): void => {
    if (a !== b) r.fail(k(key), `is ${a} but ${other} is ${b}; llama.cpp's ${arch} needs them equal`);
  };
  for (const [key, n, head] of [['rope.dimension_count', rot, headK], ['rope.dimension_count_swa', rotSwa, swaK]] as const) {
    if (n > head || n % 2 !== 0) r.fail(k(key), `is ${n}: rope needs an even count of at most the head size ${head}`);
  }
  if (arch === 'qwen3moe') {
    equal('attention.key_length', headK, 'attention.value_length', headV);
    equal('rope.dimension_count', rot, 'the head size', headK);
  }
  if (arch === 'gemma4') {
    equal('attention.key_length', headK, 'attention.value_length', headV);
    equal('attention.key_length_swa', swaK, 'attention.value_length_swa', swaV);
  }
}

/**
 * Sliding-window attention: the KV cache asserts some layer is SWA (llama-model.cpp
 * create_memory: GGML_ASSERT(hparams.is_swa_any())) for gpt-oss (a period: layer il is SWA when
 * period is 0 or il % period < period - 1) and gemma4 (one flag per layer); gemma4's shared-KV
 * layers must leave two to share from (GGML_ASSERT(n_layer_kv_from_start >= 2)).
 */
function checkAttention(r: Rules, k: (name: string) => string, arch: string, layersAll: number, nextn: number): void {
  const key = k('attention.sliding_window_pattern');
  const layers = layersAll - nextn; // hparams.n_layer()
  if (arch === 'gpt-oss' && r.file.kv.has(key)) {
    const period = r.u32(key) ?? 2;
    if (!(layers > 0 && (period === 0 || period >= 2))) r.fail(key, `is ${period}, which makes no layer sliding-window; llama.cpp's ${arch} needs one`);
  }
  if (arch === 'gemma4') {
    const flags = r.perLayer(key, layers);
    if (flags && !flags.some((f) => f !== 0)) r.fail(key, `marks no layer sliding-window; llama.cpp's ${arch} needs one`);
    const shared = r.u32(k('attention.shared_kv_layers')) ?? 0;
    const fromStart = (layersAll - (shared | 0)) | 0; // int32, as models/gemma4.cpp computes it
    if (fromStart < 2) r.fail(k('attention.shared_kv_layers'), `is ${shared}, which leaves ${fromStart} layers with their own KV; llama.cpp needs 2`);
  }
}

/** ggml's norms assert eps >= 0 (ggml-cpu ops.cpp): every <arch>.*epsilon a float32, not negative or NaN. */
function checkEpsilons(r: Rules, file: GgufFile, arch: string): void {
  for (const [key, v] of file.kv) {
    if (!key.startsWith(`${arch}.`) || !key.endsWith('epsilon')) continue;
    if (v.type !== GgufValueType.FLOAT32) r.fail(key, `is not a float32, but llama.cpp reads it as one`);
    if (!(v.value >= 0)) r.fail(key, `is ${v.value}; ggml's norms need an epsilon >= 0`);
  }
}

/** llama-vocab.cpp load: each tokenizer's default BOS/EOS ids (-1: none) and add_bos/add_eos. */
const SPECIAL_DEFAULTS: Readonly<Record<string, readonly [bos: number, eos: number, addBos: boolean, addEos: boolean]>> = {
  llama: [1, 2, true, false],
  bert: [101, -1, true, false],
  gpt2: [11, 11, true, false], // add_bos: true for several pre-tokenizers; 11 is valid in any real vocabulary
  whitespace: [11, 11, true, false],
  t5: [-1, 1, false, true],
  rwkv: [-1, -1, false, false],
  plamo2: [1, 2, true, false],
  gemma4: [-1, -1, true, false], // add_bos is forced on for Gemma 4
};

/**
 * The BOS/EOS a prompt gets must exist (llama-vocab.cpp append_bos/append_eos:
 * GGML_ASSERT(token_bos() != LLAMA_TOKEN_NULL)). An id outside the vocabulary is dropped for the
 * tokenizer's default, which may be none.
 */
function checkSpecialTokens(r: Rules, model: string, nTokens: number): void {
  const d = SPECIAL_DEFAULTS[model];
  if (!d) return;
  const special = (name: 'bos' | 'eos', fallback: number, add: boolean): void => {
    const key = `tokenizer.ggml.${name}_token_id`;
    const wanted = name === 'bos' && model === 'gemma4' ? true : (r.bool(`tokenizer.ggml.add_${name}_token`) ?? add);
    if (!wanted) return;
    const id = r.u32(key);
    if (id !== undefined && id < nTokens) return;
    if (fallback >= 0 && fallback < nTokens) return;
    const why = id === undefined ? 'is missing' : `is ${id}, outside the vocabulary of ${nTokens} tokens`;
    r.fail(key, `${why}, but prompts ${name === 'bos' ? 'start' : 'end'} with it (add_${name}_token); llama.cpp aborts without one`);
  };
  special('bos', d[0], d[2]);
  special('eos', d[1], d[3]);
}

/**
 * llama-vocab.cpp load: GGML_ASSERT(id_to_token.size() == token_to_id.size()), i.e. no two tokens
 * alike as C strings (cut at the first NUL), an empty token counting as "[EMPTY_<id>]".
 */
function checkVocab(r: Rules, file: GgufFile): void {
  const model = r.str('tokenizer.ggml.model');
  if (model === undefined || model === 'none' || model === 'no_vocab') return;
  const v = file.kv.get('tokenizer.ggml.tokens');
  if (!v || v.type !== GgufValueType.ARRAY || v.itemType !== GgufValueType.STRING) return; // llama.cpp reports these
  checkSpecialTokens(r, model, v.value.length);
  const seen = new Map<string, number>();
  v.value.forEach((token, id) => {
    const nul = token.indexOf('\0');
    const word = (nul < 0 ? token : token.slice(0, nul)) || `[EMPTY_${id}]`;
    const first = seen.get(word);
    if (first !== undefined) r.fail('tokenizer.ggml.tokens', `has token ${id} equal to token ${first} (${JSON.stringify(word.slice(0, 40))}); llama.cpp needs every token distinct`);
    seen.set(word, id);
  });
}
