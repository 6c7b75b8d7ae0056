// The recent responses, for `previous_response_id` and GET /v1/responses/{id}: an in-memory LRU
// of at most RESPONSE_STORE_SIZE responses, each with the whole conversation it ended (the items
// of the responses it continued, its own input items, its output items). llama-server has no
// store (its server_chat_convert_responses_to_chatcmpl refuses previous_response_id); OpenAI keeps
// responses for 30 days. Here they live until the server stops or 256 newer ones push them out.
import type { InputItem } from './schema.js';
import type { ResponseObject } from './shapes.js';

/** How many responses are kept (least recently used first out). */
export const RESPONSE_STORE_SIZE = 256;

export interface StoredResponse {
  response: ResponseObject;
  /** The conversation up to and including this response's output, as input items. */
  items: readonly InputItem[];
}

export class ResponseStore {
  private readonly entries = new Map<string, StoredResponse>();

  constructor(readonly capacity = RESPONSE_STORE_SIZE) {}

  get size(): number {
    return this.entries.size;
  }

  /** The response (now the most recently used), or undefined. */
  get(id: string): StoredResponse | undefined {
    const hit = this.entries.get(id);
    if (hit) {
      this.entries.delete(id);
      this.entries.set(id, hit);
    }
    return hit;
  }

  put(entry: StoredResponse): void {
    this.entries.delete(entry.response.id);
    this.entries.set(entry.response.id, entry);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  delete(id: string): boolean {
    return this.entries.delete(id);
  }
}
