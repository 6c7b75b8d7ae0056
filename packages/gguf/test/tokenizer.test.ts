import { describe, expect, it } from 'vitest';
import { buildVocab, GEMMA4_TEMPLATE, HARMONY_TEMPLATE, QWEN3_TEMPLATE, TokenType, type VocabStyle } from '../src/index.js';
import { SPM_SPACE, applyMerges, byteEncode, pretokenize } from '../src/synth/bpe.js';

const STYLES: VocabStyle[] = ['qwen3', 'harmony', 'gemma4', 'qwen35', 'deepseek4'];

function tokenize(style: VocabStyle, text: string): string[] {
  const v = buildVocab(style, 4096);
  const ranks = new Map(v.merges.map((m, i) => [m, i]));
  const split = style === 'harmony' ? 'gpt-4o' : style === 'gemma4' ? 'spm' : 'qwen2';
  return pretokenize(text, split).flatMap((unit) => applyMerges([...unit], ranks));
}

describe('synthetic vocabularies', () => {
  for (const style of STYLES) {
    it(`${style}: consistent tokens, merges and special ids`, () => {
      const v = buildVocab(style, 4096);
      expect(v.tokens).toHaveLength(4096);
      expect(new Set(v.tokens).size).toBe(v.tokens.length);
      const ids = new Map(v.tokens.map((t, i) => [t, i]));
      for (const m of v.merges) {
        const [a, b] = m.split(' ') as [string, string];
        expect(ids.has(a) && ids.has(b) && ids.has(a + b)).toBe(true);
      }
      expect(v.types.filter((t) => t === TokenType.UNUSED)).toHaveLength(4096 - v.live.length);
      expect(v.candidates.length).toBeGreaterThan(300);
      for (const c of v.candidates) expect(v.types[c]).toBe(TokenType.NORMAL);
      expect(v.eos).toBeLessThan(v.live.length);
      expect(() => buildVocab(style, 100)).toThrow(/too small/);
    });

    it(`${style}: common English words are single tokens`, () => {
      const toks = tokenize(style, 'The quick brown fox jumps over the lazy dog.');
      const sp = style === 'gemma4' ? SPM_SPACE : byteEncode(' ');
      expect(toks).toEqual(['The', `${sp}quick`, `${sp}brown`, `${sp}fox`, `${sp}jumps`, `${sp}over`, `${sp}the`, `${sp}lazy`, `${sp}dog`, '.']);
    });
  }

  it('deepseek4: begin/end of sentence at ids 0 and 1, added at the start, DeepSeek turn tokens', () => {
    const v = buildVocab('deepseek4', 129280);
    expect(v).toMatchObject({ model: 'gpt2', pre: 'deepseek-v3', bos: 0, eos: 1, addBos: true });
    for (const s of ['<｜User｜>', '<｜Assistant｜>', '<think>', '</think>', '｜DSML｜']) expect(v.special.has(s), s).toBe(true);
    expect(v.text(0)).toBe('<｜begin▁of▁sentence｜>');
  });

  it('qwen3: ChatML and thinking tokens with Qwen3 ids semantics', () => {
    const v = buildVocab('qwen3', 151936);
    expect(v.model).toBe('gpt2');
    expect(v.pre).toBe('qwen2');
    expect(v.tokens[v.eos]).toBe('<|im_end|>');
    expect(v.tokens[v.bos!]).toBe('<|endoftext|>');
    expect(v.addBos).toBe(false);
    for (const s of ['<|im_start|>', '<think>', '</think>', '<tool_call>']) expect(v.special.has(s)).toBe(true);
    expect(v.types[v.special.get('<think>')!]).toBe(TokenType.USER_DEFINED);
    expect(v.types[v.special.get('<|im_start|>')!]).toBe(TokenType.CONTROL);
    // 256 byte-level base tokens in GPT-2's byte→unicode encoding
    expect(v.tokens.slice(0, 256)).toContain('Ġ');
    expect(v.tokens[32]).toBe('Ġ'); // byte 0x20
  });

  it('harmony: gpt-oss framing tokens', () => {
    const v = buildVocab('harmony', 201088);
    expect(v.pre).toBe('gpt-4o');
    for (const s of ['<|start|>', '<|end|>', '<|message|>', '<|channel|>', '<|return|>', '<|call|>', '<|constrain|>']) expect(v.special.has(s)).toBe(true);
    expect(v.tokens[v.eos]).toBe('<|return|>');
  });

  it('gemma4: SentencePiece-style BPE with byte fallback and turn tokens', () => {
    const v = buildVocab('gemma4', 262144);
    expect(v.model).toBe('gemma4');
    expect(v.pre).toBeUndefined();
    expect(v.addBos).toBe(true);
    expect(v.tokens[v.bos!]).toBe('<bos>');
    const b = v.tokens.indexOf('<0x0A>');
    expect(v.types[b]).toBe(TokenType.BYTE);
    expect(v.text(b)).toBe('\n');
    for (const s of ['<|turn>', '<turn|>', '<|channel>', '<channel|>', '<|think|>', '<|tool_call>']) expect(v.special.has(s)).toBe(true);
  });
});

describe('chat templates carry what llama.cpp detects each family by', () => {
  it('qwen3: ChatML, empty think block when thinking is off', () => {
    expect(QWEN3_TEMPLATE).toContain("'<|im_start|>assistant\\n'");
    expect(QWEN3_TEMPLATE).toContain("enable_thinking is false -%}{{- '<think>\\n\\n</think>\\n\\n'");
    expect(QWEN3_TEMPLATE).not.toContain('<function=');
  });
  it('gpt-oss: harmony channels, final channel when thinking is off', () => {
    expect(HARMONY_TEMPLATE).toContain('<|channel|>');
    expect(HARMONY_TEMPLATE).toContain('<|channel|>analysis<|message|><|end|><|start|>assistant<|channel|>final<|message|>');
  });
  it('gemma4: tool-call marker, OpenAI note, empty thought channel when thinking is off', () => {
    expect(GEMMA4_TEMPLATE).toContain("'<|tool_call>call:'");
    expect(GEMMA4_TEMPLATE).toContain('{#- OpenAI Chat Completions:');
    expect(GEMMA4_TEMPLATE).toContain("'<|channel>thought\\n<channel|>'");
  });
});
