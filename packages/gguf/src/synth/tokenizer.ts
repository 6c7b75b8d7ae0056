// Real, working vocabularies for synthetic models.
//
// qwen3moe, qwen35moe, gpt-oss and deepseek4 get byte-level BPE vocabs (tokenizer.ggml.model
// "gpt2") with the pre-tokenizer llama.cpp expects for them ("qwen2", "qwen35", "gpt-4o",
// "deepseek-v3"; qwen35 and deepseek-v3 are trained on the qwen2 split, which they match on the
// built-in corpus except that deepseek-v3 keeps up to 3 digits together); gemma4 gets what its
// converter writes: tokenizer.ggml.model "gemma4", which llama.cpp loads as BPE over raw UTF-8
// with SentencePiece-style "▁" spaces and "<0xXX>" byte-fallback tokens (llama-vocab.cpp:
// LLAMA_VOCAB_PRE_TYPE_GEMMA4, byte_encode = false, escape_whitespaces = true). A gpt2-type vocab
// would also load for a gemma4 model, but Gemma 4's chat tokens and whitespace handling are
// defined for the "gemma4" tokenizer, so that is the one we write.
//
// Merges are learned on the built-in corpus; the special tokens are each family's real ones
// (names only); the rest of the declared vocab size is padding that is never generated.

import { CORPUS } from './corpus.js';
import { SPM_SPACE, byteDecode, bytesToUnicode, pretokenize, trainBpe, type SplitStyle } from './bpe.js';

/** llama.cpp token types (LLAMA_TOKEN_TYPE_*), stored in tokenizer.ggml.token_type. */
export enum TokenType {
  NORMAL = 1,
  UNKNOWN = 2,
  CONTROL = 3,
  USER_DEFINED = 4,
  UNUSED = 5,
  BYTE = 6,
}

export type VocabStyle = 'qwen3' | 'harmony' | 'gemma4' | 'qwen35' | 'deepseek4';

export interface SynthVocab {
  readonly style: VocabStyle;
  /** tokenizer.ggml.model */
  readonly model: 'gpt2' | 'gemma4';
  /** tokenizer.ggml.pre (absent for gemma4, whose model implies it) */
  readonly pre: string | undefined;
  readonly tokens: readonly string[];
  readonly types: readonly TokenType[];
  /** "left right" merge strings in rank order. */
  readonly merges: readonly string[];
  /** Ids of the family's special tokens by text. */
  readonly special: ReadonlyMap<string, number>;
  readonly bos: number | undefined;
  readonly eos: number;
  readonly pad: number | undefined;
  readonly unk: number | undefined;
  readonly addBos: boolean;
  /** Tokens that exist for real (everything but padding); each gets planted successors. */
  readonly live: readonly number[];
  /** Word-like normal tokens: the only tokens chosen as successors, so text reads as words
   * and generation never produces an end-of-generation or control token. */
  readonly candidates: readonly number[];
  /** Decoded text of a token (for tests and tools). */
  text(id: number): string;
}

interface Special {
  readonly text: string;
  readonly type: TokenType;
}

const ctl = (text: string): Special => ({ text, type: TokenType.CONTROL });
const usr = (text: string): Special => ({ text, type: TokenType.USER_DEFINED });

// Qwen3's added tokens (tokenizer_config.json of the Qwen3 release): ChatML turns, vision/FIM
// placeholders, and the tool-call / thinking tags, which are not "special" there (they render
// as text), hence USER_DEFINED.
const QWEN3_SPECIALS: readonly Special[] = [
  ctl('<|endoftext|>'), ctl('<|im_start|>'), ctl('<|im_end|>'),
  ctl('<|object_ref_start|>'), ctl('<|object_ref_end|>'), ctl('<|box_start|>'), ctl('<|box_end|>'),
  ctl('<|quad_start|>'), ctl('<|quad_end|>'), ctl('<|vision_start|>'), ctl('<|vision_end|>'),
  ctl('<|vision_pad|>'), ctl('<|image_pad|>'), ctl('<|video_pad|>'),
  usr('<tool_call>'), usr('</tool_call>'),
  ctl('<|fim_prefix|>'), ctl('<|fim_middle|>'), ctl('<|fim_suffix|>'), ctl('<|fim_pad|>'),
  ctl('<|repo_name|>'), ctl('<|file_sep|>'),
  usr('<tool_response>'), usr('</tool_response>'), usr('<think>'), usr('</think>'),
];

// o200k_harmony's specials (gpt-oss): the harmony message framing tokens.
const HARMONY_SPECIALS: readonly Special[] = [
  ctl('<|startoftext|>'), ctl('<|endoftext|>'), ctl('<|return|>'), ctl('<|constrain|>'),
  ctl('<|channel|>'), ctl('<|start|>'), ctl('<|end|>'), ctl('<|message|>'), ctl('<|call|>'),
];

// DeepSeek V3/V4's special tokens as its chat template uses them (names as in the template; ids
// differ: the real vocab puts begin/end of sentence at 0 and 1, as this one does, and the rest at
// its end). ｜DSML｜ marks V4's tool-call markup.
const DEEPSEEK4_SPECIALS: readonly Special[] = [
  ctl('<｜begin▁of▁sentence｜>'), ctl('<｜end▁of▁sentence｜>'), ctl('<｜▁pad▁｜>'),
  ctl('<｜User｜>'), ctl('<｜Assistant｜>'), usr('<think>'), usr('</think>'), usr('｜DSML｜'),
];

// Gemma 4's control tokens as its chat template and llama.cpp's gemma4 parser use them. The
// converter marks the channel / tool-call / quote tokens USER_DEFINED so they always render.
const GEMMA4_SPECIALS: readonly Special[] = [
  ctl('<pad>'), ctl('<eos>'), ctl('<bos>'), { text: '<unk>', type: TokenType.UNKNOWN }, ctl('<mask>'),
  ctl('<|turn>'), ctl('<turn|>'), ctl('<|think|>'),
  usr('<|channel>'), usr('<channel|>'), ctl('<|tool>'), ctl('<tool|>'),
  usr('<|tool_call>'), usr('<tool_call|>'), usr('<|tool_response>'), usr('<tool_response|>'), usr('<|"|>'),
  ctl('<|image|>'), ctl('<|audio|>'), ctl('<|video|>'),
];

interface Trained {
  readonly merges: ReadonlyArray<readonly [string, string]>;
  readonly tokens: readonly string[];
  /** Whole pre-token units of the corpus (words with their leading space, punctuation runs). */
  readonly units: ReadonlySet<string>;
}

const trainedCache = new Map<SplitStyle, Trained>();

/**
 * Train once per split style (a pure function of the corpus, ~0.2 s). minCount 1 merges every
 * corpus word into a single token, so the vocab is "every word we wrote" plus its fragments.
 */
function trained(style: SplitStyle): Trained {
  let t = trainedCache.get(style);
  if (!t) {
    const units = pretokenize(CORPUS, style);
    t = { ...trainBpe(units, 8000, 1), units: new Set(units) };
    trainedCache.set(style, t);
  }
  return t;
}

/**
 * A successor candidate: a whole corpus word with its leading space (" quick"), or a single
 * punctuation mark. Words without a leading space would glue onto the previous word.
 */
function isCandidate(unit: string, units: ReadonlySet<string>, text: string): boolean {
  return units.has(unit) && (/^ \p{L}+$/u.test(text) || /^[.,;:!?]$/.test(text));
}

/** The smallest vocab size a style needs (bytes + merges + specials). */
export function minVocabSize(style: VocabStyle): number {
  return buildVocab(style, Number.MAX_SAFE_INTEGER, true).tokens.length;
}

/** Each family's tokenizer model, pre-tokenizer and special ids, as its real GGUFs have them. */
function familyFields(style: VocabStyle, id: (s: string) => number): Pick<SynthVocab, 'model' | 'pre' | 'bos' | 'eos' | 'pad' | 'unk' | 'addBos'> {
  switch (style) {
    case 'qwen3':
    case 'qwen35':
      // As Qwen3's GGUFs: no BOS is added; <|endoftext|> doubles as bos/pad; turns end with <|im_end|>.
      return { model: 'gpt2', pre: style === 'qwen3' ? 'qwen2' : 'qwen35', bos: id('<|endoftext|>'), eos: id('<|im_end|>'), pad: id('<|endoftext|>'), unk: undefined, addBos: false };
    case 'deepseek4':
      // As DeepSeek's GGUFs: BOS added; replies end with <｜end▁of▁sentence｜>.
      return { model: 'gpt2', pre: 'deepseek-v3', bos: id('<｜begin▁of▁sentence｜>'), eos: id('<｜end▁of▁sentence｜>'), pad: id('<｜▁pad▁｜>'), unk: undefined, addBos: true };
    case 'harmony':
      return { model: 'gpt2', pre: 'gpt-4o', bos: id('<|startoftext|>'), eos: id('<|return|>'), pad: id('<|endoftext|>'), unk: undefined, addBos: false };
    case 'gemma4':
      return { model: 'gemma4', pre: undefined, bos: id('<bos>'), eos: id('<eos>'), pad: id('<pad>'), unk: id('<unk>'), addBos: true };
  }
}

/**
 * Build the vocab of a style, padded to vocabSize with UNUSED tokens.
 * Throws when vocabSize is too small for bytes + merges + specials.
 */
export function buildVocab(style: VocabStyle, vocabSize: number, unpadded = false): SynthVocab {
  const tokens: string[] = [];
  const types: TokenType[] = [];
  const special = new Map<string, number>();
  const add = (text: string, type: TokenType): number => {
    tokens.push(text);
    types.push(type);
    return tokens.length - 1;
  };
  const addSpecials = (list: readonly Special[]): void => {
    for (const s of list) special.set(s.text, add(s.text, s.type));
  };
  let merges: string[];
  let decode: (t: string) => string;
  const candidateFrom = new Set<number>();

  if (style === 'gemma4') {
    addSpecials(GEMMA4_SPECIALS);
    for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, TokenType.BYTE);
    // Single characters the merges start from; everything else falls back to <0xXX> bytes.
    add(SPM_SPACE, TokenType.NORMAL);
    add('\n', TokenType.NORMAL);
    add('\n\n', TokenType.NORMAL);
    add('\t', TokenType.NORMAL);
    for (let c = 0x21; c <= 0x7e; c++) add(String.fromCharCode(c), TokenType.NORMAL);
    const t = trained('spm');
    const have = new Set(tokens);
    for (const tok of t.tokens) {
      if (have.has(tok)) continue;
      have.add(tok);
      add(tok, TokenType.NORMAL);
    }
    tokens.forEach((tok, id) => {
      if (types[id] === TokenType.NORMAL && isCandidate(tok, t.units, tok.replaceAll(SPM_SPACE, ' '))) candidateFrom.add(id);
    });
    merges = t.merges.map(([a, b]) => `${a} ${b}`);
    decode = (s) => s.replaceAll(SPM_SPACE, ' ');
  } else {
    if (style === 'deepseek4') addSpecials(DEEPSEEK4_SPECIALS);
    const byteChars = bytesToUnicode();
    for (let b = 0; b < 256; b++) add(byteChars[b]!, TokenType.NORMAL);
    const t = trained(style === 'harmony' ? 'gpt-4o' : 'qwen2');
    for (const tok of t.tokens) add(tok, TokenType.NORMAL);
    tokens.forEach((tok, id) => {
      if (types[id] === TokenType.NORMAL && isCandidate(tok, t.units, byteDecode(tok))) candidateFrom.add(id);
    });
    merges = t.merges.map(([a, b]) => `${a} ${b}`);
    if (style !== 'deepseek4') addSpecials(style === 'harmony' ? HARMONY_SPECIALS : QWEN3_SPECIALS);
    decode = (s) => byteDecode(s);
  }

  const liveCount = tokens.length;
  if (!unpadded) {
    if (vocabSize < liveCount) throw new RangeError(`vocab size ${vocabSize} is too small: the ${style} vocab needs at least ${liveCount} tokens`);
    while (tokens.length < vocabSize) {
      const id = tokens.length;
      add(style === 'gemma4' ? `<unused${id - liveCount}>` : style === 'harmony' ? `<|reserved_${id}|>` : `[PAD${id}]`, TokenType.UNUSED);
    }
  }

  const id = (s: string): number => {
    const v = special.get(s);
    if (v === undefined) throw new Error(`internal: missing special ${s}`);
    return v;
  };
  const live = Array.from({ length: liveCount }, (_, i) => i);
  const candidates = [...candidateFrom].sort((a, b) => a - b);
  const specialIds = new Set(special.values());
  const text = (i: number): string => {
    const tok = tokens[i];
    if (tok === undefined) throw new RangeError(`token ${i} out of range`);
    if (specialIds.has(i) || types[i] === TokenType.UNUSED) return tok;
    if (style === 'gemma4' && types[i] === TokenType.BYTE) return String.fromCharCode(parseInt(tok.slice(3, 5), 16));
    return decode(tok);
  };

  return { style, tokens, types, merges, special, live, candidates, text, ...familyFields(style, id) };
}
