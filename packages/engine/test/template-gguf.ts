// A copy of a GGUF with another chat template (`tokenizer.chat_template`), for tests of what a
// model file's template may do.
import { gv, rewriteGguf } from '@bmoe/gguf';

export async function withChatTemplate(src: string, out: string, template: string): Promise<void> {
  await rewriteGguf(src, out, { 'tokenizer.chat_template': gv.str(template) });
}

/** A ChatML template: what the hostile ones below add their trap to. */
export const CHATML =
  "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
