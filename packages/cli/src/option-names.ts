// Engine option errors name engine options ("nExpertUsed must be ..."); on the command line the
// user typed flags, so name those instead.
const FLAGS: Record<string, string> = {
  threads: '--threads',
  contextSize: '--ctx-size',
  batchSize: '--batch-size',
  ubatchSize: '--ubatch-size',
  nExpertUsed: '--n-expert-used',
  maxTokens: '--n-predict',
  temperature: '--temp',
  topK: '--top-k',
  topP: '--top-p',
  seed: '--seed',
  'stream.moeStream': '--moe-stream',
  'stream.cacheMb': '--cache-mb',
  'stream.cacheCeilMb': '--cache-ceil-mb',
  'stream.ioThreads': '--io-threads',
  'stream.prefetch': '--prefetch',
  'stream.denseWeights': '--dense-weights',
};

/** Replaces engine option names at word boundaries with the matching CLI flags. */
export function withFlagNames(message: string): string {
  return message.replace(/(?<![\w.-])(stream\.\w+|[a-z][A-Za-z]+)(?![\w-])/g, (word) => FLAGS[word] ?? word);
}
