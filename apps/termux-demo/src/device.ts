// The device facts the settings rule needs, read once per decision: the engine's reader
// (MemTotal and MemAvailable from /proc/meminfo, the memory cgroup except on Android, the cores).
export { readDeviceFacts } from '@bmoe/engine';
