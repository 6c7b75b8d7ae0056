// @bmoe/bench: benchmark runners. The CLI is `bmoe-bench` (src/bin.ts).
export { createMemoryCgroup, dropCaches, removeCgroup, runInCgroup, CgroupError, type CgroupRun, type MemoryCgroup } from './cgroup.js';
export { fullHitRatio, runTargets, targetRows, targetsReport, type RowResult, type TargetsOptions } from './targets.js';
