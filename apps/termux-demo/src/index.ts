// @bmoe/termux-demo: the phone demo's pieces, for tests and for embedding.
export { chooseSettings, deviceWithUsable, formatSize, runFlags, usableBytes, RULE, type DemoMode, type DemoSettings, type DeviceFacts, type ModelFacts } from './settings.js';
export { readDeviceFacts } from './device.js';
export { describeModelFile, isModelFile, isProjectorFile, listModels, listModelsFolder, type DescribeOptions, type ModelEntry, type ModelList, type ProjectorEntry } from './models.js';
export { mountOf, probeODirect, type ODirectProbe } from './probe.js';
export { defaultModelsDir } from './paths.js';
export {
  PUBLIC_DIR,
  startDemo,
  type Demo,
  type DemoOptions,
  type DemoState,
  type DemoStateName,
} from './demo.js';
