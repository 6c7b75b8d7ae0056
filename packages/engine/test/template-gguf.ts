// A copy of a GGUF with another chat template (`tokenizer.chat_template`), for tests of what a
// model file's template may do.
import { open } from 'node:fs/promises';
import { gv, readGguf, writeGguf, type GgufValue } from '@bmoe/gguf';

export async function withChatTemplate(src: string, out: string, template: string): Promise<void> {
  const file = await readGguf(src);
  const kv: [string, GgufValue][] = [...file.kv]
    .filter(([k]) => k !== 'general.alignment')
    .map(([k, v]) => [k, k === 'tokenizer.chat_template' ? gv.str(template) : v]);
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  const fh = await open(src, 'r');
  try {
    const layout = { kv, tensors: file.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type })), alignment: file.alignment };
    await writeGguf(out, layout, async function* (t) {
      const from = byName.get(t.name);
      if (!from) throw new Error(`${src}: no tensor ${t.name}`);
      const buf = Buffer.alloc(from.bytes);
      await fh.read(buf, 0, from.bytes, from.offset);
      yield buf;
    });
  } finally {
    await fh.close();
  }
}

/** A ChatML template: what the hostile ones below add their trap to. */
export const CHATML =
  "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
