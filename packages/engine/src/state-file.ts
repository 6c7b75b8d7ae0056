// A session's KV state on disk: the native file (core-native's runtime/kv_state: the sequence's
// KV cache and tokens, checksummed) carries, in its header, this JSON meta: which model and
// context it belongs to, and the conversation it holds. A file is checked against the model and
// the session before anything is loaded, naming what differs.
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { BmoeError, messageOf } from './errors.js';
import type { ChatMessage } from './messages.js';

export const STATE_FORMAT = 'bmoe-kv/1';

export interface StateMeta {
  format: typeof STATE_FORMAT;
  /** modelIdentity() of the model that computed the state. */
  model: string;
  /** The model file's name, for the error that says the file is another model's. */
  modelName: string;
  contextSize: number;
  /** The session's system message and the conversation chat() kept (empty for generate()). */
  system: string | null;
  history: ChatMessage[];
  /** The caller's own data (a server's slot index keeps the tokens here). */
  extra?: unknown;
}

/**
 * The meta as the file's header: an image given as bytes is kept as a data URL (a path or a data
 * URL stays as given), so the restored history sends the same images again.
 */
export function stateJson(meta: StateMeta): string {
  return JSON.stringify(meta, (_key, value: unknown) =>
    value instanceof Uint8Array ? `data:application/octet-stream;base64,${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')}` : value,
  );
}

const SAMPLE_HEAD = 1 << 20;
const SAMPLE_TAIL = 1 << 16;

/**
 * What identifies a model's weights without reading them all: each file's size, its first MiB
 * (the GGUF header, and for small files the weights) and its last 64 KiB, hashed (sha256). Two
 * models of one architecture and shape from different seeds differ in it.
 */
export async function modelIdentity(files: readonly { path: string; bytes: number }[]): Promise<string> {
  const h = createHash('sha256');
  for (const f of files) {
    h.update(`${f.bytes}\n`);
    const fh = await open(f.path, 'r');
    try {
      const head = Buffer.alloc(Math.min(SAMPLE_HEAD, f.bytes));
      await fh.read(head, 0, head.length, 0);
      h.update(head);
      const tail = Buffer.alloc(Math.min(SAMPLE_TAIL, f.bytes));
      await fh.read(tail, 0, tail.length, f.bytes - tail.length);
      h.update(tail);
    } finally {
      await fh.close();
    }
  }
  return h.digest('hex');
}

/** The meta read from a state file's header (`text`), checked against what the session expects. */
export function checkStateMeta(text: string, path: string, expected: { model: string; modelName: string; contextSize: number }): StateMeta {
  let meta: StateMeta;
  try {
    meta = JSON.parse(text) as StateMeta;
  } catch (err) {
    throw new BmoeError('E_STATE', `${path}: not a bmoe session state (its header is not JSON: ${messageOf(err)})`, { cause: err });
  }
  if (meta === null || typeof meta !== 'object' || meta.format !== STATE_FORMAT) {
    throw new BmoeError('E_STATE', `${path}: not a bmoe session state of this version (format ${JSON.stringify((meta as { format?: unknown } | null)?.format)}, expected '${STATE_FORMAT}')`);
  }
  if (meta.model !== expected.model) {
    throw new BmoeError('E_STATE', `${path}: the state was saved with another model (${meta.modelName}), not ${expected.modelName}`);
  }
  if (meta.contextSize !== expected.contextSize) {
    throw new BmoeError('E_STATE', `${path}: the state was saved with contextSize ${meta.contextSize}; this session has ${expected.contextSize}`);
  }
  if (!Array.isArray(meta.history)) throw new BmoeError('E_STATE', `${path}: the state's history is not a list of messages`);
  return meta;
}
