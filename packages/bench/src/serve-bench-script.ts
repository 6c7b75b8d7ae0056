// What `bmoe-bench serve` sends, the same to both servers, and how it reads their streams. Pure:
// deterministic filler text, the tokens-per-word calibration that sizes it, the conversations of
// each row, the SSE parser and the statistics of a stream's token times.
import { percentile } from '@bmoe/engine/metrics';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

const WORDS = (
  'the of and to in is was that for on as with by at from his her they this which are be had were not but one all when there ' +
  'their an who been has more will would so if out up about into than them can only other new some could time these two may then ' +
  'first any like now my such make over our even most made after also did many before must through back years where much your way ' +
  'well down should because each just those people how too little state good very world still own see men work long get here ' +
  'between both life being under never day same another know while last might us great old year off come since against go came ' +
  'right used take three house river light harbor keeper lantern evening morning winter summer garden market village road stone ' +
  'window letter teacher doctor engine bridge mountain island forest valley journey question answer history music paper water ' +
  'morning color number simple quiet careful bright heavy early late small large open green golden silver ancient modern'
).split(' ');

/** A deterministic 32-bit generator (mulberry32): the same seed gives the same text everywhere. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `words` words of sentence-shaped English (8–16 words a sentence), the same for the same seed. */
export function fillerText(seed: number, words: number): string {
  const next = rng(seed);
  const out: string[] = [];
  let left = Math.max(1, Math.round(words));
  while (left > 0) {
    const n = Math.min(left, 8 + Math.floor(next() * 9));
    const sentence = Array.from({ length: n }, () => WORDS[Math.floor(next() * WORDS.length)]!);
    sentence[0] = sentence[0]!.charAt(0).toUpperCase() + sentence[0]!.slice(1);
    out.push(`${sentence.join(' ')}.`);
    left -= n;
  }
  return out.join(' ');
}

/** Words of the calibration probe, and its seed. */
export const PROBE_WORDS = 400;
export const PROBE_SEED = 9001;
/** The warm-up message whose prompt is the template's overhead. */
export const WARM_UP_MESSAGE = 'Hello.';

/** The probe's messages: one user message of PROBE_WORDS filler words. */
export const probeMessages = (): ChatMessage[] => [{ role: 'user', content: fillerText(PROBE_SEED, PROBE_WORDS) }];

export interface Calibration {
  /** Prompt tokens of the warm-up (the template around a two-token message). */
  overheadTokens: number;
  /** Prompt tokens of the probe. */
  probeTokens: number;
  /** Filler tokens per word, from the two. */
  tokensPerWord: number;
}

/** The calibration from the warm-up's and the probe's prompt tokens, as one server counted them. */
export function calibrate(overheadTokens: number, probeTokens: number): Calibration {
  const tokensPerWord = Math.max(0.25, (probeTokens - overheadTokens) / PROBE_WORDS);
  return { overheadTokens, probeTokens, tokensPerWord };
}

/** Filler words that make about `tokens` tokens. */
export const wordsFor = (cal: Calibration, tokens: number): number => Math.max(1, Math.round(tokens / cal.tokensPerWord));

export interface ScriptSizes {
  /** Row (a): tokens of each conversation's system prompt. */
  systemTokens: number;
  /** Row (a): turns of each conversation. */
  turns: number;
  /** Row (c): tokens of the conversation built in one request. */
  resumeTokens: number;
}

export interface Scripts {
  /** Row (a): two conversations, each its system prompt and one user message per turn. */
  alternating: { system: string; users: string[] }[];
  /** Row (c): the conversation built in one request, the one that makes the slot switch, and the next turn. */
  resume: { build: ChatMessage[]; other: ChatMessage[]; next: string };
}

const userTurn = (seed: number): string => `${fillerText(seed, 24)} Answer in one sentence.`;

/** Everything rows (a) and (c) send, sized by the calibration. */
export function buildScripts(cal: Calibration, s: ScriptSizes): Scripts {
  const alternating = [1, 2].map((conv) => ({
    system: `You are assistant number ${conv}. ${fillerText(1000 * conv, wordsFor(cal, s.systemTokens))}`,
    users: Array.from({ length: s.turns }, (_, t) => userTurn(1000 * conv + t + 1)),
  }));
  // A chat of four exchanges: a system prompt of a tenth, then user and assistant turns.
  const exchanges = 4;
  const systemWords = wordsFor(cal, s.resumeTokens / 10);
  const turnWords = wordsFor(cal, (s.resumeTokens * 0.9) / (2 * exchanges + 1));
  const build: ChatMessage[] = [{ role: 'system', content: `You are a careful archivist. ${fillerText(5000, systemWords)}` }];
  for (let i = 0; i < exchanges; i++) {
    build.push({ role: 'user', content: fillerText(5001 + 2 * i, turnWords) });
    build.push({ role: 'assistant', content: fillerText(5002 + 2 * i, turnWords) });
  }
  build.push({ role: 'user', content: fillerText(5100, turnWords) });
  const other: ChatMessage[] = [
    { role: 'system', content: `You are a different assistant. ${fillerText(6000, wordsFor(cal, 100))}` },
    { role: 'user', content: userTurn(6001) },
  ];
  return { alternating, resume: { build, other, next: userTurn(5200) } };
}

/** Row (b)'s user message of client `c`, request `r` (0-based): distinct from the first word. */
export const loadPrompt = (c: number, r: number): string => `Request ${c + 1}.${r + 1}: ${fillerText(7000 + 100 * c + r, 20)} Continue the story.`;

/** The data payloads of the complete events in `buffer`, and what is left of an event still arriving. */
export function splitSse(buffer: string): { data: string[]; rest: string } {
  const text = buffer.replace(/\r\n/g, '\n');
  const parts = text.split('\n\n');
  const rest = parts.pop() ?? '';
  const data: string[] = [];
  for (const event of parts) {
    const lines = event.split('\n').filter((l) => l.startsWith('data:'));
    if (lines.length > 0) data.push(lines.map((l) => l.slice(5).replace(/^ /, '')).join('\n'));
  }
  return { data, rest };
}

/** A streamed chat chunk, the parts both servers send. */
export interface StreamChunk {
  choices?: { delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null; tool_calls?: unknown[] } }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null } | null;
  error?: unknown;
}

/** Whether a chunk carries generated text (content or reasoning, or a tool call's piece). */
export function carriesToken(chunk: StreamChunk): boolean {
  const d = chunk.choices?.[0]?.delta;
  if (!d) return false;
  return Boolean(d.content) || Boolean(d.reasoning_content) || Boolean(d.reasoning) || (Array.isArray(d.tool_calls) && d.tool_calls.length > 0);
}

/** Gaps between consecutive times. */
export function gaps(times: readonly number[]): number[] {
  return times.slice(1).map((t, i) => t - times[i]!);
}

/**
 * Appends a stream's rate as received, tokens per second from its first token to its last (the
 * gaps after the first over their span): robust to tokens that arrive together in one read, whose
 * gaps of 0 make a p50 of 0 on a fast model. Nothing when there is no span.
 */
export function pushReceivedRate(rates: number[], times: readonly number[]): void {
  const span = times.length < 2 ? 0 : times.at(-1)! - times[0]!;
  if (span > 0) rates.push(((times.length - 1) * 1000) / span);
}

export interface GapStats {
  p50Ms: number;
  p95Ms: number;
  /** Gaps counted. */
  n: number;
}

/** p50 and p95 of the gaps (0 when there are none). */
export function gapStats(values: readonly number[]): GapStats {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50Ms: percentile(sorted, 50), p95Ms: percentile(sorted, 95), n: sorted.length };
}

/** The mean, null for none. */
export const mean = (xs: readonly number[]): number | null => (xs.length === 0 ? null : xs.reduce((a, x) => a + x, 0) / xs.length);
