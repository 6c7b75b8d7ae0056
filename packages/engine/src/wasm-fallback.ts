// The wasm32-wasi fallback never pretends: it runs resident models in one thread and cannot stream
// experts, so a load that needs streaming (asked for, or a model bigger than the memory left) is
// refused before anything loads, in one line naming the way out: `bmoe native build`, which builds
// the native addon on this machine (the loader then takes it before wasm).
import { BmoeError } from './errors.js';
import type { ModelHeaderInfo } from './inspect.js';
import type { ResolvedLoadOptions } from './options/api.js';
import { SETTINGS_RULE, formatSize, usableMemory } from './settings.js';
import { readDeviceFacts, type DeviceFacts } from './system.js';

/** What to do about it, said once. */
export const NATIVE_BUILD_HINT = 'run `bmoe native build` to build the native addon for this machine';

/** Throws BmoeError('E_UNSUPPORTED') when the wasm32-wasi build cannot hold this load. */
export function refuseWhatWasmCannot(header: Pick<ModelHeaderInfo, 'path' | 'fileBytes'>, opts: Pick<ResolvedLoadOptions, 'stream'>, device: DeviceFacts = readDeviceFacts()): void {
  if (opts.stream) {
    throw new BmoeError('E_UNSUPPORTED', `${header.path}: streaming experts needs a native binary, and only the wasm32-wasi build loaded: ${NATIVE_BUILD_HINT}`);
  }
  const usable = usableMemory(device);
  if (header.fileBytes + SETTINGS_RULE.overheadBytes > usable.bytes) {
    throw new BmoeError(
      'E_UNSUPPORTED',
      `${header.path}: the model (${formatSize(header.fileBytes)}) does not fit in the ${formatSize(usable.bytes)} of memory available, ` +
        `and the wasm32-wasi build that loaded cannot stream its experts: ${NATIVE_BUILD_HINT}`,
    );
  }
}
