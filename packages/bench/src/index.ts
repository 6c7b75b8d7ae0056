// @bmoe/bench: benchmark runners. The CLI is `bmoe-bench` (src/bin.ts); `bmoe bench` registers the
// same commands through registerBenchCommands.
export { registerBenchCommands, type BenchCommandOptions } from './commands.js';
export { main } from './main.js';
export { ENV_BMOE_CLI, findBmoeCommand, modelCacheDir } from './runner.js';
export { createMemoryCgroup, dropCaches, removeCgroup, runInCgroup, CgroupError, type CgroupRun, type MemoryCgroup, type RunHooks } from './cgroup.js';
export {
  BUILTIN_SETS,
  ConfigError,
  DEFAULT_BENCH_MODEL,
  loadConfigSet,
  modelSlug,
  parseConfigSet,
  resolveFlags,
  rowStem,
  specCachePercent,
  SPEC_QWEN_EXPERT_BYTES,
  type BenchConfig,
  type ConfigTool,
} from './configs.js';
export { readRowRecord, runMatrix, type MatrixOptions, type MatrixProgress, type MatrixResult } from './matrix.js';
export { AnalyzeError, analyzeRow, loadMatrixDir, summaryMarkdown, type AnalyzedRow, type LoadedRow, type SummaryOptions } from './analyze.js';
export { readVsHitSpec, renderPng, renderSvg, throughputSpec, timelineSpec, warmupSpec, writePlots } from './plots.js';
export { foldPressure, readProcessPeakRss, startPressureSampler, type PressureSample, type PressureSampler } from './pressure.js';
export { calibrate, calibrationReport, hitError, refineCandidates, SPEC_HIT_POINTS, type CalibrateOptions, type CalibrationPoint, type CalibrationResult } from './calibrate.js';
export {
  ROW_KEYS,
  DEFAULT_ROWS,
  ceilingTargets,
  hostPrebuiltTarget,
  medianRound,
  noPrebuiltError,
  prebuiltRowName,
  runTargets,
  targetRows,
  type RowKey,
  type RowResult,
  type TargetsOptions,
} from './targets.js';
export { edgeTargets, llamaTarget, pairedTargets, prebuiltTarget, rooflineRatio, targetsReport, type Target } from './targets-report.js';
export { parseEdgeOutput, type EdgeRun } from './edge-output.js';
export { fullHitRatio } from './full-hit.js';
export { registerServeLoad, runServeLoad, serveLoadReport, type LatencyStats, type ServeLoadOptions, type ServeLoadResult } from './serve-load.js';
export { parseDoneEvent, parsePeerRate, type DoneEvent } from './run-output.js';
export { llamaCompletionArgv, llamaCompletionTool, type LlamaCompletionRun } from './llama-completion.js';
export { DEFAULT_SOAK, runSoak, soakFailures, soakReport, type SoakKindStats, type SoakOptions, type SoakReport } from './soak.js';
export { ALLOWED as SOAK_ALLOWED_OUTCOMES, SOAK_KINDS, type SoakKind } from './soak-requests.js';
export type { Outcome as SoakOutcome } from './soak-context.js';
export { registerSoak } from './soak-command.js';
export { OPENMP_POLICIES, WAIT_POLICIES, median, requireOpenmpAddon, runWaiting, waitingArgv, waitingReport, type WaitPolicy, type WaitingCell, type WaitingOptions } from './waiting.js';
export { runServeBench, SERVE_ROWS, type ServeBenchOptions, type ServeBenchResult, type ServeRow, type SideRun, type SidePair, type TurnSample, type LoadRun, type ResumeRun, type ChatTiming } from './serve-bench.js';
export { serveBenchReport, serveBenchRows, followUpRatio, meanGaps, type ReportRow as ServeBenchRow } from './serve-bench-report.js';
export { registerServeBench, serveRows, clientCounts, failedSides } from './serve-bench-command.js';
export { bmoeServeFlags, llamaServerFlags, llamaServerTool, type ServerConfig, type Side } from './serve-bench-servers.js';
