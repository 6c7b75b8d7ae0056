// The one place the engine touches @bmoe/core-native. Imported dynamically so that importing
// @bmoe/engine (or its metrics) never loads C++: only loadModel() does.
import type { NativeBinding } from '@bmoe/core-native';
import { BmoeError, messageOf } from './errors.js';

let binding: NativeBinding | undefined;

/** The loaded addon; throws BmoeError('E_NATIVE') with the loader's own one-line reason. */
export async function nativeBinding(): Promise<NativeBinding> {
  if (binding) return binding;
  try {
    const mod = await import('@bmoe/core-native');
    binding = mod.loadBinding();
  } catch (err) {
    throw new BmoeError('E_NATIVE', `native addon unavailable: ${messageOf(err)}`, { cause: err });
  }
  return binding;
}

/** True when the binary that loaded is the wasm32-wasi fallback (resident, one thread, no streaming). */
export async function nativeIsWasm(): Promise<boolean> {
  await nativeBinding();
  const mod = await import('@bmoe/core-native');
  return mod.bindingSource().wasm;
}

/** True when the native addon loads on this machine (tests skip the integration suites otherwise). */
export async function isNativeAvailable(): Promise<boolean> {
  try {
    await nativeBinding();
    return true;
  } catch {
    return false;
  }
}
