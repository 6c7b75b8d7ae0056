// The device facts the settings rule needs, read once per decision: MemTotal from the engine's
// sensor reader (/proc/meminfo; Node's totalmem() where that is hidden) and the online cores.
import { availableParallelism, totalmem } from 'node:os';
import { readDeviceSensors } from '@bmoe/engine';
import type { DeviceFacts } from './settings.js';

export function readDeviceFacts(): DeviceFacts {
  return { memTotalBytes: readDeviceSensors().memTotalBytes ?? totalmem(), cores: availableParallelism() };
}
