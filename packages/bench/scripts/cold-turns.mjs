// Follow-up turns of chat conversations (one session keeping its KV cache, with and without turn
// preparation) against a cold run of the same messages: how many give other greedy tokens.
// From the repository root, after the build:
//   node packages/bench/scripts/cold-turns.mjs MODEL.gguf [CONVERSATIONS]
import { loadModel } from '../../engine/dist/index.js';

const [path, count] = process.argv.slice(2);
if (!path) {
  console.error('usage: cold-turns.mjs MODEL.gguf [CONVERSATIONS]');
  process.exit(2);
}
const conversations = Number(count ?? 8);
const model = await loadModel(path, { threads: 2 });
const cold = model.createSession({ contextSize: 4096 });
for (const prepareTurns of [true, false]) {
  let differ = 0;
  let total = 0;
  for (let c = 0; c < conversations; c++) {
    const session = model.createSession({ contextSize: 4096, prepareTurns });
    const messages = [
      { role: 'system', content: `You answer questions about topic ${c}. `.repeat(10) },
      { role: 'user', content: `Question ${c * 7} about the harbor?` },
    ];
    for (let turn = 0; turn < 3; turn++) {
      const sent = messages.map((m) => ({ ...m }));
      const warm = await session.generate(messages, { maxTokens: 12 }).result;
      if (turn > 0) {
        cold.reset();
        const again = await cold.generate(sent, { maxTokens: 12 }).result;
        total++;
        if (again.tokens.join() !== warm.tokens.join()) differ++;
      }
      messages.push({ role: 'assistant', content: warm.message.content }, { role: 'user', content: `And then ${turn}?` });
      await new Promise((resolve) => setTimeout(resolve, 300)); // the client reads the answer
    }
    await session.close();
  }
  console.log(`prepareTurns ${prepareTurns}: ${differ} of ${total} follow-up turns differ from a cold run`);
}
await cold.close();
await model.close();
