// A small, deterministic byte-pair-encoding trainer and the pre-tokenizers it needs.
//
// llama.cpp applies merges by rank inside each pre-token its pre-tokenizer regex produces, so
// training must split text the same way or the learned merges never fire. We therefore train
// on the same splits llama.cpp uses for each vocab style: the Qwen2 and GPT-4o (o200k) regexes
// for byte-level BPE ("gpt2" vocabs), and SentencePiece-style "▁word" units for Gemma 4's BPE.

/** GPT-2's reversible byte → printable unicode char table (bytes_to_unicode). */
export function bytesToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const map = new Array<string>(256);
  for (const b of bs) map[b] = String.fromCodePoint(b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (map[b] === undefined) {
      map[b] = String.fromCodePoint(256 + n);
      n++;
    }
  }
  return map;
}

const BYTE_CHARS = bytesToUnicode();
const CHAR_BYTES = new Map<string, number>(BYTE_CHARS.map((c, b) => [c, b]));

/** Text → GPT-2 byte-level symbol string. */
export function byteEncode(text: string): string {
  let s = '';
  for (const b of Buffer.from(text, 'utf8')) s += BYTE_CHARS[b];
  return s;
}

/** GPT-2 byte-level symbol string → text (invalid UTF-8 is replaced). */
export function byteDecode(s: string): string {
  const bytes: number[] = [];
  for (const ch of s) {
    const b = CHAR_BYTES.get(ch);
    if (b === undefined) throw new Error(`not a byte-level symbol: ${JSON.stringify(ch)}`);
    bytes.push(b);
  }
  return Buffer.from(bytes).toString('utf8');
}

const CONTRACTIONS = "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]";

/** llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN2 regex ("qwen2"), with (?i:) spelled out for JS. */
export const QWEN2_SPLIT = new RegExp(
  `(?:${CONTRACTIONS})|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`,
  'gu',
);

/** llama.cpp's LLAMA_VOCAB_PRE_TYPE_GPT4O regex ("gpt-4o", o200k), with (?i:) spelled out. */
export const GPT4O_SPLIT = new RegExp(
  `[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:${CONTRACTIONS})?` +
    `|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:${CONTRACTIONS})?` +
    `|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`,
  'gu',
);

/** SentencePiece's whitespace marker. */
export const SPM_SPACE = '\u2581';

/** Units for SPM-style BPE training: "▁word", "▁", punctuation runs, digits; never a newline. */
const SPM_UNITS = new RegExp(`${SPM_SPACE}?\\p{L}+|${SPM_SPACE}?\\p{N}|${SPM_SPACE}?[^${SPM_SPACE}\\s\\p{L}\\p{N}]+|${SPM_SPACE}+`, 'gu');

export type SplitStyle = 'qwen2' | 'gpt-4o' | 'spm';

/** Pre-tokenize text into the units merges are learned within, in symbol form. */
export function pretokenize(text: string, style: SplitStyle): string[] {
  if (style === 'spm') {
    const out: string[] = [];
    for (const line of text.split('\n')) {
      for (const m of line.replaceAll(' ', SPM_SPACE).matchAll(SPM_UNITS)) out.push(m[0]);
    }
    return out;
  }
  const re = style === 'qwen2' ? QWEN2_SPLIT : GPT4O_SPLIT;
  return [...text.matchAll(re)].map((m) => byteEncode(m[0]));
}

export interface BpeResult {
  /** Merges in rank order, as [left, right] symbol strings. */
  readonly merges: ReadonlyArray<readonly [string, string]>;
  /** New tokens in creation order (merge results, without duplicates). */
  readonly tokens: readonly string[];
}

/**
 * Learn up to maxMerges merges over pre-tokenized units: each step merges the most frequent
 * adjacent pair (ties broken by the pair's text, so the result is deterministic), stopping
 * when no pair occurs at least minCount times.
 */
export function trainBpe(units: readonly string[], maxMerges: number, minCount = 2): BpeResult {
  const counts = new Map<string, number>();
  for (const u of units) counts.set(u, (counts.get(u) ?? 0) + 1);
  const words: { syms: string[]; n: number }[] = [...counts.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([u, n]) => ({ syms: [...u], n }));
  const merges: [string, string][] = [];
  const tokens: string[] = [];
  const seen = new Set<string>();
  const SEP = '\u0000';
  while (merges.length < maxMerges) {
    const pairs = new Map<string, number>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.syms.length; i++) {
        const k = w.syms[i] + SEP + w.syms[i + 1];
        pairs.set(k, (pairs.get(k) ?? 0) + w.n);
      }
    }
    let best: string | undefined;
    let bestN = 0;
    for (const [k, n] of pairs) {
      if (n > bestN || (n === bestN && best !== undefined && k < best)) {
        best = k;
        bestN = n;
      }
    }
    if (best === undefined || bestN < minCount) break;
    const [a, b] = best.split(SEP) as [string, string];
    merges.push([a, b]);
    const ab = a + b;
    if (!seen.has(ab)) {
      seen.add(ab);
      tokens.push(ab);
    }
    for (const w of words) {
      const s = w.syms;
      for (let i = 0; i + 1 < s.length; i++) {
        if (s[i] === a && s[i + 1] === b) s.splice(i, 2, ab);
      }
    }
  }
  return { merges, tokens };
}

/**
 * Tokenize one pre-token with learned merges, the way llama.cpp's BPE session does: repeatedly
 * apply the lowest-ranked adjacent pair. Used by tests to check the vocab behaves.
 */
export function applyMerges(symbols: readonly string[], ranks: ReadonlyMap<string, number>): string[] {
  const s = [...symbols];
  for (;;) {
    let best = -1;
    let bestRank = Infinity;
    for (let i = 0; i + 1 < s.length; i++) {
      const r = ranks.get(`${s[i]} ${s[i + 1]}`);
      if (r !== undefined && r < bestRank) {
        bestRank = r;
        best = i;
      }
    }
    if (best < 0) return s;
    s.splice(best, 2, s[best]! + s[best + 1]!);
  }
}
