// The wasm32-wasi addon has no threads: prepare() cannot run off the JS thread there, so it is
// the synchronous template + tokenize behind a promise, and fileStatus() is always "" (the model
// is read into wasm memory, not mapped: a changed file cannot touch it).
import type { NativeBinding, NativeModel, NativePrepareInput } from './types.js';

type WasmModel = Omit<NativeModel, 'prepare' | 'fileStatus'>;

function withPrepare(m: WasmModel): NativeModel {
  const bos = Number(m.info().meta['tokenizer.ggml.bos_token_id']);
  const prepare = (input: NativePrepareInput): Promise<Int32Array> => {
    try {
      if ('text' in input) return Promise.resolve(m.tokenize(input.text, true, true));
      const text = m.applyChatTemplate(input.messages, { chatml: input.chatml, think: input.think, addAssistant: true });
      const toks = m.tokenize(text, true, true);
      const twoBos = Number.isInteger(bos) && toks.length >= 2 && toks[0] === bos && toks[1] === bos;
      return Promise.resolve(twoBos ? toks.subarray(1) : toks);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  };
  return Object.assign(m, { prepare, fileStatus: () => '' });
}

/** The wasm binding with the NativeModel methods it implements in JS. */
export function wasmBinding(b: Omit<NativeBinding, 'loadModel'> & { loadModel(p: Parameters<NativeBinding['loadModel']>[0]): Promise<WasmModel> }): NativeBinding {
  return { ...b, loadModel: async (p) => withPrepare(await b.loadModel(p)) } as NativeBinding;
}
