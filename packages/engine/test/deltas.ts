// What a streaming client does with message deltas: concatenates them into a message.
import type { AssistantMessage, MessageDelta } from '../src/messages.js';

export interface Accumulated {
  content: string;
  reasoning: string;
  calls: Array<{ id?: string; name?: string; arguments: string }>;
}

/** The deltas concatenated, as a client accumulates them (OpenAI's streaming rules). */
export function accumulate(deltas: readonly MessageDelta[]): Accumulated {
  const out: Accumulated = { content: '', reasoning: '', calls: [] };
  for (const d of deltas) {
    out.content += d.content ?? '';
    out.reasoning += d.reasoningContent ?? '';
    for (const c of d.toolCalls ?? []) {
      const call = (out.calls[c.index] ??= { arguments: '' });
      if (c.id !== undefined) call.id = c.id;
      if (c.function.name !== undefined) call.name = c.function.name;
      call.arguments += c.function.arguments ?? '';
    }
  }
  return out;
}

/** A final message in the accumulated shape (reasoning null as ''). */
export function asAccumulated(m: AssistantMessage): Accumulated {
  return {
    content: m.content,
    reasoning: m.reasoningContent ?? '',
    calls: m.toolCalls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
  };
}
