// The recent responses, for `previous_response_id` and GET /v1/responses/{id}: an in-memory LRU
// of at most RESPONSE_STORE_SIZE responses, each with the whole conversation it ended (the items
// of the responses it continued, its own input items, its output items). llama-server has no
// store (its server_chat_convert_responses_to_chatcmpl refuses previous_response_id); OpenAI keeps
// responses for 30 days. Here they live until the server stops or 256 newer ones push them out —
// or, as images are kept as their data URLs, until their images pass RESPONSE_STORE_IMAGE_CHARS.
import type { InputItem } from './schema.js';
import type { ResponseObject } from './shapes.js';

/** How many responses are kept (least recently used first out). */
export const RESPONSE_STORE_SIZE = 256;
/**
 * The image URLs of the kept conversations, in characters, at most (least recently used out
 * first; the newest is kept whatever its size). Counted per response: a follow-up counts its
 * conversation's images again, though it shares them with the response it continues.
 */
export const RESPONSE_STORE_IMAGE_CHARS = 256 * 1024 * 1024;

/** The characters of a conversation's image URLs (data URLs hold the images). */
function imageChars(items: readonly InputItem[]): number {
  let n = 0;
  for (const item of items) {
    if (item.type !== 'message' || typeof item.content === 'string') continue;
    for (const p of item.content) if (p.type === 'input_image') n += p.image_url?.length ?? 0;
  }
  return n;
}

export interface StoredResponse {
  response: ResponseObject;
  /** The conversation up to and including this response's output, as input items. */
  items: readonly InputItem[];
}

export class ResponseStore {
  private readonly entries = new Map<string, StoredResponse>();
  private readonly chars = new Map<string, number>();
  private imageTotal = 0;

  constructor(
    readonly capacity = RESPONSE_STORE_SIZE,
    readonly imageCapacity = RESPONSE_STORE_IMAGE_CHARS,
  ) {}

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
    const id = entry.response.id;
    this.delete(id);
    const chars = imageChars(entry.items);
    this.entries.set(id, entry);
    this.chars.set(id, chars);
    this.imageTotal += chars;
    while (this.entries.size > this.capacity || (this.imageTotal > this.imageCapacity && this.entries.size > 1)) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.delete(oldest);
    }
  }

  delete(id: string): boolean {
    this.imageTotal -= this.chars.get(id) ?? 0;
    this.chars.delete(id);
    return this.entries.delete(id);
  }
}
