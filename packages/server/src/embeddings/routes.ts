// POST /v1/embeddings, as llama-server serves it (handle_embeddings_impl in
// tools/server/server-context.cpp, format_embeddings_response_oaicompat in server-common.cpp):
// each input's pooled, L2-normalized vector (Model.embed, the server's `pooling`), as floats or as
// base64 of little-endian float32, with the tokens evaluated as `usage`. Without the server option
// `embeddings` (`bmoe serve --embeddings`) it answers 501, as llama-server does.
//
// The engine embeds in a context of its own, so requests here never wait for the slots'
// generations: they take turns among themselves (one runs, at most `maxQueue` wait, 429 beyond).
import { endianness } from 'node:os';
import { BmoeError, type Model, type Pooling } from '@bmoe/engine';
import type { FastifyInstance } from 'fastify';
import type { ServerCore } from '../core.js';
import { ApiError, badRequest, messageOf, shuttingDown } from '../errors.js';
import { watchRequest } from '../serve.js';
import { QueueFullError, TurnCancelledError, Turns } from '../turns.js';
import { embeddingsBody, type EmbeddingsBody } from './schema.js';

/** One vector of the answer: floats, or base64 of their little-endian float32 bytes. */
export interface EmbeddingData {
  object: 'embedding';
  index: number;
  embedding: number[] | string;
}

/** The answer, OpenAI's `CreateEmbeddingResponse`. */
export interface EmbeddingsResponse {
  object: 'list';
  data: EmbeddingData[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** llama-server's answer without --embeddings (its wording, its 501 and error type). */
const notEnabled = (): ApiError =>
  new ApiError(501, 'not_supported_error', 'This server does not support embeddings. Start it with `--embeddings` (createServer option embeddings: true)', 'embeddings_disabled');

const LITTLE_ENDIAN = endianness() === 'LE';

/** A vector as base64 of its float32 values, little-endian (what the `openai` client decodes). */
export function float32Base64(v: Float32Array): string {
  if (LITTLE_ENDIAN) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  const out = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) out.writeFloatLE(v[i]!, i * 4);
  return out.toString('base64');
}

/** The request's inputs as the engine takes them: one list of strings or token arrays. */
function inputsOf(input: EmbeddingsBody['input']): Array<string | number[]> {
  if (isSingle(input)) return typeof input === 'string' ? [input] : [input as number[]];
  return input as Array<string | number[]>;
}

/** Whether the request sent one input (a string or one token array): the engine's `input[0]` is then `input`. */
const isSingle = (input: EmbeddingsBody['input']): boolean => typeof input === 'string' || typeof input[0] === 'number';

const INDEXED = /^input\[(\d+)\]((?:\[\d+\])*)/;

/**
 * An engine refusal as the answer: a bad input is a 400 naming it (`input`, `input[2]`, or the token
 * at fault), a model with no pooling of its own under pooling 'model' a 400 naming --pooling, the
 * wasm32 build a 501, a closing model a 503; anything else is ours (500).
 */
export function embedError(err: unknown, input: EmbeddingsBody['input'], tokenCounts: readonly number[], pooling: Pooling): ApiError {
  if (err instanceof ApiError) return err;
  if (!(err instanceof BmoeError)) return new ApiError(500, 'server_error', `embedding failed: ${messageOf(err)}`, 'embedding_failed');
  if (err.code === 'E_UNSUPPORTED') return new ApiError(501, 'not_supported_error', `embeddings are not supported here: ${err.message}`, 'unsupported');
  if (err.code === 'E_CLOSED') return shuttingDown();
  if (err.code !== 'E_OPTION') return new ApiError(500, 'server_error', `embedding failed: ${err.message}`, 'embedding_failed');
  if (err.message.startsWith('pooling:')) {
    // The server's configuration, not the request's: no field to name.
    const why = err.message.slice('pooling:'.length).trim();
    const how = why.includes('--pooling') ? '' : '; start the server with --pooling mean, cls or last';
    return badRequest(`cannot embed with this server's pooling '${pooling}': ${why}${how}`, null, 'invalid_pooling');
  }
  // "an input has N tokens; an embedding takes at most M": the first input of N tokens is the one.
  const long = /^an input has (\d+) tokens; (.*)$/.exec(err.message);
  if (long) {
    const i = tokenCounts.indexOf(Number(long[1]));
    const param = i < 0 || isSingle(input) ? 'input' : `input[${i}]`;
    return badRequest(`invalid '${param}': it has ${long[1]} tokens; ${long[2]}`, param, 'context_length_exceeded');
  }
  const at = INDEXED.exec(err.message);
  if (at) {
    const param = isSingle(input) ? `input${at[2]}` : at[0];
    return badRequest(`${param}${err.message.slice(at[0].length)}`, param, 'invalid_value');
  }
  return badRequest(err.message, 'input', 'invalid_value');
}

/** The vectors of the request's inputs: tokenized as a raw prompt each (BOS included), pooled, normalized. */
async function embed(core: ServerCore, model: Model, b: EmbeddingsBody): Promise<EmbeddingsResponse> {
  let tokens: number[][] = [];
  let vectors: Float32Array[];
  let promptTokens: number;
  try {
    // Tokenized here, as Model.embed does (tokenize's defaults), to tell which input is too long.
    tokens = inputsOf(b.input).map((x) => (typeof x === 'string' ? model.tokenize(x) : x));
    ({ embeddings: vectors, promptTokens } = await model.embed(tokens, { pooling: core.opts.pooling }));
  } catch (err) {
    throw embedError(err, b.input, tokens.map((t) => t.length), core.opts.pooling);
  }
  const base64 = b.encoding_format === 'base64';
  return {
    object: 'list',
    data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: base64 ? float32Base64(v) : Array.from(v) })),
    model: core.opts.modelId,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };
}

export function registerEmbeddings(v1: FastifyInstance, core: ServerCore): void {
  if (!core.opts.embeddings) {
    // No schema: whatever the body, the answer is that the endpoint is off.
    v1.post('/embeddings', async () => {
      throw notEnabled();
    });
    return;
  }
  const turns = new Turns(core.opts.maxQueue);
  v1.post<{ Body: EmbeddingsBody }>('/embeddings', { schema: { body: embeddingsBody } }, async (req, reply) => {
    const b = req.body;
    const size = core.serving().model.info.embeddingLength;
    if (b.dimensions !== undefined && b.dimensions !== null && b.dimensions !== size) {
      throw new ApiError(400, 'invalid_request_error', `invalid 'dimensions': this model's embeddings have ${size} dimensions and are not shortened; send ${size} or leave it out, got ${b.dimensions}`, 'unsupported_value', 'dimensions');
    }
    // Fires when the client leaves (or the shutdown grace ends) while the request waits for its turn.
    const watch = watchRequest(reply, core.shutdownSignal);
    let release: () => void;
    try {
      release = await turns.acquire(watch.signal);
    } catch (err) {
      watch.dispose();
      if (err instanceof TurnCancelledError && watch.disconnected()) {
        // Nobody to answer.
        reply.hijack();
        return undefined;
      }
      if (err instanceof QueueFullError) {
        throw new ApiError(429, 'rate_limit_error', `the server is busy: ${err.waiting} embedding requests are waiting (max queue ${turns.maxQueue}); retry after 1 s`, 'queue_full', null, { 'retry-after': '1' });
      }
      throw err instanceof TurnCancelledError ? shuttingDown() : err;
    }
    try {
      watch.dispose();
      // Asked again: the server may have begun closing while this request waited.
      return await embed(core, core.serving().model, b);
    } finally {
      release();
    }
  });
}
