// The demo's one decision, how to load a model on this phone, is the engine's settings rule
// (`chooseSettings` in @bmoe/engine, the same rule `bmoe run`, `bmoe chat` and `bmoe serve` use):
// resident when the model fits what MemAvailable leaves above 1 GiB (counting 512 MiB of runtime),
// otherwise streamed with cache 'auto' under a ceiling that leaves the dense weights and the
// runtime room; threads and read lanes from the cores. On Android the memory cgroup is not
// consulted (readDeviceFacts). The demo adds only its context size. A pure function of the model's
// header facts and the device's facts, so the model picker can show, for every GGUF in the folder,
// exactly the settings a load would use.
import {
  chooseSettings as chooseEngineSettings,
  formatSize,
  SETTINGS_RULE,
  usableMemory,
  type ChosenSettings,
  type DeviceFacts,
  type ModelFacts,
  type SettingsMode,
} from '@bmoe/engine';
import { loadOptionFlags, type LoadOptions } from '@bmoe/engine/options';

export { formatSize, type DeviceFacts, type ModelFacts };

/** The rule's constants (the engine's), plus the context size the demo loads with. */
export const RULE = { ...SETTINGS_RULE, contextSize: 4096 } as const;

export type DemoMode = SettingsMode;
export type DemoSettings = ChosenSettings;

/** RAM the demo may hold on `device` (the engine rule's usable memory). */
export function usableBytes(device: DeviceFacts): number {
  return usableMemory(device).bytes;
}

/** The settings the demo loads `model` with on `device`: the engine's rule, at the demo's context size. */
export function chooseSettings(model: ModelFacts, device: DeviceFacts): DemoSettings {
  return chooseEngineSettings(model, device, { contextSize: RULE.contextSize });
}

/**
 * A phone (no memory cgroup) on which the rule may hold `usable` bytes: MemAvailable is that plus
 * the floor, MemTotal 1 GiB more. For tests and screenshots.
 */
export function deviceWithUsable(usable: number, cores: number): DeviceFacts {
  const available = usable + RULE.floorBytes;
  return { memTotalBytes: available + 1024 ** 3, memAvailableBytes: available, cgroup: null, cores };
}

/** The same load options as `bmoe run` / `bmoe serve` flags (what to type to reproduce a run), from the engine's option table. */
export function runFlags(load: LoadOptions): string[] {
  return loadOptionFlags(load);
}
