// The body of POST /v1/embeddings, as a zod schema checked by the server's validator hook
// (validate.ts), strict as the other bodies (schemas.ts): OpenAI's fields — `input` (a string, an
// array of strings, an array of token ids, or an array of token-id arrays; strings and token-id
// arrays mixed too, as llama-server's tokenize_input_prompts takes them), `model`, `encoding_format`, `dimensions`,
// `user` — and llama-server's `embd_normalize` at its one value here (2: L2, what the engine gives).
import { z } from 'zod';
import { NULLABLE, ignored, model, unsupported } from '../request-fields.js';

/** Inputs one request may embed, as OpenAI's API allows (each is one engine evaluation). */
export const MAX_EMBEDDING_INPUTS = 2048;

const INPUT = `must be a string, or an array of 1 to ${MAX_EMBEDDING_INPUTS} strings or token-id arrays, or an array of token ids`;
const ITEM = 'must be a string, a token id or an array of token ids';
const TOKEN = 'must be a token id (a non-negative integer)';
const tokenId = z.number(TOKEN).int(TOKEN).min(0, TOKEN).max(2 ** 31 - 1, TOKEN);
const tokenIds = z.array(tokenId, 'must be an array of token ids').min(1, 'must not be empty');

/**
 * One input (a string), or an array: of token ids (one input), or of inputs (strings or token-id
 * arrays). The array's bounds and its kinds are checked after the items, so a refusal names the
 * item at fault rather than a union branch's first mismatch.
 */
export const embeddingsInput = z
  .union([z.string(INPUT), z.array(z.union([z.string(ITEM), tokenId, tokenIds], ITEM), INPUT)], INPUT)
  .superRefine((v, ctx) => {
    if (typeof v === 'string') return;
    if (v.length === 0) return void ctx.addIssue({ code: 'custom', message: 'must not be empty' });
    const ids = typeof v[0] === 'number';
    const odd = v.findIndex((x) => (typeof x === 'number') !== ids);
    if (odd >= 0) {
      const message = ids
        ? 'must be a token id: an array of token ids (one input) holds token ids only'
        : 'must be a string or an array of token ids: an array of inputs holds no bare token ids (one token-id array is sent alone)';
      return void ctx.addIssue({ code: 'custom', message, path: [odd] });
    }
    if (!ids && v.length > MAX_EMBEDDING_INPUTS) ctx.addIssue({ code: 'custom', message: `must hold at most ${MAX_EMBEDDING_INPUTS} inputs` });
  });

const FORMAT = "must be 'float' or 'base64'";
const DIMENSIONS = 'must be a positive integer';

export const embeddingsBody = z
  .strictObject(
    {
      input: embeddingsInput.optional(),
      model,
      encoding_format: NULLABLE(z.enum(['float', 'base64'], FORMAT)),
      // Only the model's own size: the vectors are not shortened (routes.ts).
      dimensions: NULLABLE(z.number(DIMENSIONS).int(DIMENSIONS).min(1, DIMENSIONS)),
      user: ignored(z.string('must be a string')),
      // llama-server's: the vectors here are always L2-normalized (its default, 2).
      embd_normalize: unsupported('only 2 (L2 normalization, the default) is supported', (v) => v === 2),
    },
    'the body must be a JSON object',
  )
  .superRefine((b, ctx) => {
    if (b.input === undefined) ctx.addIssue({ code: 'custom', path: ['input'], message: 'a string, an array of strings or token-id arrays, or an array of token ids', params: { kind: 'missing' } });
  });

export type EmbeddingsInput = z.infer<typeof embeddingsInput>;
/** The body once validated: `input` is there. */
export type EmbeddingsBody = z.infer<typeof embeddingsBody> & { input: EmbeddingsInput };
