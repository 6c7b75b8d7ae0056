// The logits after a prompt evaluated whole, against the same prompt evaluated after a cached
// prefix (the last N tokens evaluated alone), bit for bit, on any GGUF: what patch 0008's
// batch-invariant prompts guarantee. Run it with LLAMA_BATCH_INVARIANT=0 to see upstream's kernels
// (chosen by batch size) give other bits. From the repository root, after the build:
//   node packages/bench/scripts/prefix-bits.mjs MODEL.gguf [--no-repack]
import { loadBinding } from '../../core-native/dist/index.js';

const [path, flag] = process.argv.slice(2);
if (!path) {
  console.error('usage: prefix-bits.mjs MODEL.gguf [--no-repack]');
  process.exit(2);
}
const model = await loadBinding().loadModel({ path, repack: flag !== '--no-repack' });
const text = 'The harbor keeper lit the lantern in the evening, and the river ran cold under the stone bridge. '.repeat(12);
const tokens = model.tokenize(text, true, false);

async function logitsAfter(prefix) {
  const ctx = model.createContext({ nCtx: 2048, nBatch: 2048, nUbatch: 512, threads: 2 });
  const run = async (t) => {
    let logits = null;
    await ctx.generate({ tokens: t, maxTokens: 1, sampling: { temperature: 0 }, logits: true, seq: 0 }, (_p, _e, _v, extras) => {
      logits = extras?.logits ?? logits;
    });
    return logits;
  };
  if (prefix !== null) await run(tokens.subarray(0, prefix));
  const out = await run(tokens);
  ctx.close();
  return out;
}

const cold = await logitsAfter(null);
console.log(`${path}: ${tokens.length} prompt tokens, repack ${flag !== '--no-repack'}, LLAMA_BATCH_INVARIANT=${process.env.LLAMA_BATCH_INVARIANT ?? '(unset)'}`);
for (const n of [1, 5, 17, 40, 63, 64, 65, 100, 130]) {
  const warm = await logitsAfter(tokens.length - n);
  let differ = 0;
  let max = 0;
  for (let i = 0; i < cold.length; i++) {
    const d = Math.abs(cold[i] - warm[i]);
    if (d !== 0) differ++;
    if (d > max) max = d;
  }
  console.log(`last ${n} tokens after the cached rest: ${differ} of ${cold.length} logits differ, max ${max.toExponential(2)}`);
}
model.close();
