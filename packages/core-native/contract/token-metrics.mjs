// THE per-token metrics columns, once, in the order of the spec's per-token CSV. One name per
// thing: the snake_case column is the name in the CSV, the docs, the C++ struct and (by one rule)
// in Prometheus; its camelCase is the TypeScript field and the key of the native addon's record.
// scripts/contract.mjs generates the C++ X-macro lists (include/bmoe/contract/token_metrics.h) and
// TOKEN_COLUMNS in binding/contract.ts, from which @bmoe/engine/metrics derives the TokenMetrics
// type, the zod schema, the CSV and the Prometheus names. Adding a metric: one row here and the
// code that measures it.
//
// kind: `id` identifies the token; `time` (ms) and `counter` are per-token deltas that add up;
// `gauge` is a level sampled after the token. cpp: the C++ type (times are double, the rest
// integers). native: false = read in JS after the token (not in the C++ record). nullable: may be
// unknown (an empty CSV cell).
//
// Hits, misses, prefetches and route-ahead counts count experts: one per MoE layer and routed
// expert of a decode (the union over a prompt batch's tokens), its gate/up/down slices together
// (src/stream/streamer.cpp).
export const TOKEN_COLUMNS = [
  { column: 'token_index', kind: 'id', cpp: 'int32', description: '0-based index of the generated token in its generation' },
  { column: 'token_id', kind: 'id', cpp: 'int32', description: 'vocabulary id of the token' },
  { column: 'wall_ms', kind: 'time', cpp: 'double', description: 'decode time of this token: one llama_decode, prompt processing and load excluded' },
  { column: 'compute_ms', kind: 'time', cpp: 'double', description: 'compute time: wall − io − mgmt (a serial decode); wall − stall − mgmt (an overlapped one)' },
  { column: 'io_ms', kind: 'time', cpp: 'double', description: 'a serial decode: time blocked on expert reads; an overlapped one: summed busy time of the read lanes' },
  { column: 'stall_ms', kind: 'time', cpp: 'double', description: 'an overlapped decode: compute time lost waiting for reads (0 when serial)' },
  { column: 'mgmt_ms', kind: 'time', cpp: 'double', description: 'expert cache bookkeeping: lookups, commits, evictions' },
  { column: 'read_bytes', kind: 'counter', cpp: 'uint64', description: 'bytes read from the model file for experts (page-rounded slices)' },
  { column: 'expert_hits', kind: 'counter', cpp: 'uint64', description: 'routed experts (layer × expert) found in the cache' },
  { column: 'expert_misses', kind: 'counter', cpp: 'uint64', description: 'routed experts (layer × expert) read from flash' },
  { column: 'cache_resident_bytes', kind: 'gauge', cpp: 'uint64', description: 'expert cache bytes resident after the token' },
  { column: 'prefetch_issued', kind: 'counter', cpp: 'uint64', description: 'speculative expert reads started' },
  { column: 'prefetch_useful', kind: 'counter', cpp: 'uint64', description: 'speculatively read experts that a later routing used' },
  { column: 'ahead_routed', kind: 'counter', cpp: 'uint64', description: "routed experts of the MoE layers that had a route-ahead prediction (the accuracy's denominator)" },
  { column: 'ahead_correct', kind: 'counter', cpp: 'uint64', description: 'of those, the experts the route-ahead prediction named (accuracy = ahead_correct / ahead_routed)' },
  { column: 'ahead_read', kind: 'counter', cpp: 'uint64', description: 'experts read ahead because of a route-ahead prediction (predicted and not already resident)' },
  { column: 'ahead_wasted_bytes', kind: 'counter', cpp: 'uint64', description: "bytes read ahead for experts the next layer's real routing did not use" },
  // A 0/1 count per decode, so it sums to the decodes that overlapped (bmoe_overlapped_total).
  { column: 'overlapped', kind: 'counter', cpp: 'uint64', description: 'decodes that overlapped their expert reads with their compute: 1 or 0 (--overlap, --no-overlap, or what auto chose or probed)' },
  // As overlapped: sums to the decodes that read ahead (bmoe_ahead_on_total).
  { column: 'ahead_on', kind: 'counter', cpp: 'uint64', description: 'decodes with route-ahead in force: 1 or 0 (--route-ahead, --no-route-ahead, or what auto chose or probed)' },
  { column: 'major_faults', kind: 'counter', cpp: 'uint64', description: 'major page faults (getrusage delta)' },
  { column: 'minor_faults', kind: 'counter', cpp: 'uint64', description: 'minor page faults (getrusage delta)' },
  { column: 'cpu_ms', kind: 'time', cpp: 'double', description: 'process CPU time, all threads' },
  { column: 'rss_bytes', kind: 'gauge', cpp: 'uint64', description: 'process resident set size after the token' },
  { column: 'mem_available_bytes', kind: 'gauge', cpp: 'uint64', native: false, nullable: true, description: 'system MemAvailable (/proc/meminfo) after the token, read at most every 100 ms (the tokens in between repeat that reading); empty where unreadable' },
];
