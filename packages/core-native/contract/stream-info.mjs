// THE stream info: what `model.streamInfo()` returns (the streamer's resolved settings and its
// decode state), once. scripts/contract.mjs generates the C++ X-macro lists that the `stream_info`
// struct and the addon's JS object expand (include/bmoe/contract/stream_info.h), and the
// TypeScript interfaces NativeStreamInfo / NativeProbeArm (binding/contract.ts).
// Types: uint64 (sent to JS as a double), int32, double, bool, string; `ts` overrides the
// TypeScript type of a string; `list` names a list of another record.

export const PROBE_ARM = {
  ts: 'NativeProbeArm',
  cpp: 'probe_arm',
  doc: 'One combination auto compares, and its median at the last probe.',
  fields: [
    { key: 'overlap', cpp: 'overlap', type: 'bool', doc: 'Reads overlapped with compute in this combination.' },
    { key: 'routeAhead', cpp: 'route_ahead', type: 'bool', doc: 'Route-ahead reads in this combination.' },
    { key: 'medianMs', cpp: 'median_ms', type: 'double', doc: 'Median wall time of a one-token decode in this combination in the current or last probe (updated each round), ms; 0 before the first round ended.' },
    { key: 'timed', cpp: 'timed', type: 'int32', doc: 'One-token decodes behind `medianMs` (a clearly slower combination leaves the probe after 3; close ones are timed longer).' },
  ],
};

export const STREAM_INFO = {
  ts: 'NativeStreamInfo',
  cpp: 'stream_info',
  doc: 'What the streamer resolved at load, and its decode state when asked (it changes as auto probes).',
  fields: [
    { key: 'budgetBytes', cpp: 'budget_bytes', type: 'uint64', doc: "The expert cache budget in force: cacheMb resolved ('auto' applied), in bytes." },
    { key: 'configuredSlots', cpp: 'configured_slots', type: 'int32', doc: 'Experts the budget holds.' },
    { key: 'workingSetBytes', cpp: 'working_set_bytes', type: 'uint64', doc: "One token's routed experts, in bytes." },
    { key: 'expertBytes', cpp: 'expert_bytes', type: 'uint64', doc: 'Every expert of the model, in bytes.' },
    { key: 'denseBytes', cpp: 'dense_bytes', type: 'uint64', doc: 'The non-expert weights, in bytes.' },
    { key: 'topK', cpp: 'top_k', type: 'int32', doc: 'Experts routed per token and layer.' },
    { key: 'ioThreads', cpp: 'io_threads', type: 'int32', doc: 'Read lanes.' },
    { key: 'overlap', cpp: 'overlap', type: 'bool', doc: 'Overlap in force now: forced on, or what auto chose at its last probe (the simplest combination before one ended).' },
    { key: 'overlapMode', cpp: 'overlap_mode', type: 'string', ts: "'on' | 'off' | 'auto'", doc: "What was asked: 'on' (overlap: true), 'off' (false) or 'auto' (measured)." },
    { key: 'routeAhead', cpp: 'route_ahead', type: 'bool', doc: 'Route-ahead in force now: forced on, or what auto chose at its last probe (as overlap).' },
    { key: 'routeAheadMode', cpp: 'route_ahead_mode', type: 'string', ts: "'on' | 'off' | 'auto'", doc: "What was asked: 'on' (routeAhead: true), 'off' (false) or 'auto' (measured)." },
    { key: 'probe', cpp: 'probe', type: 'list', of: 'PROBE_ARM', doc: 'Every combination auto compares, in probe order (serial, overlap, route-ahead, overlap + route-ahead, those allowed); empty when neither overlap nor route-ahead is auto.' },
    { key: 'probes', cpp: 'probes', type: 'int32', doc: 'Probes auto started since load: the first, one after every 128 one-token decodes in force, and those a drift started (0 when neither overlap nor route-ahead is auto).' },
    { key: 'driftProbes', cpp: 'drift_probes', type: 'int32', doc: "Of `probes`, those started early: the median of the chosen combination's last 8 decodes was 25 % above its probe median, and beyond the noise of both (the disk slowed, a neighbour came)." },
    { key: 'warning', cpp: 'warning', type: 'string', doc: 'A problem the streamer worked around (O_DIRECT refused, auto fell back to no cache); "" when none.' },
    { key: 'totalHits', cpp: 'total_hits', type: 'uint64', doc: 'Routed experts found in the cache since load.' },
    { key: 'totalMisses', cpp: 'total_misses', type: 'uint64', doc: 'Routed experts read from the file since load.' },
  ],
};
