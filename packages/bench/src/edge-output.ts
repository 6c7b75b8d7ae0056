// What BigMoeOnEdge's `bmoe-cli` prints at the end of a run (its `generation:` and `moe-stream:`
// lines on stdout), read for `bmoe-bench targets`' `edge-stream0` row: the peer engine on the same
// file, cache 0, serial, beside bmoe's `stream0` row. Its lines are not bmoe's (no prompt in
// `generation:`, cache management printed in `moe-stream:`), so they are read here. Pure.

/** One run of the peer, s/token from its own end-of-run lines. */
export interface EdgeRun {
  tokens: number;
  secondsPerToken: number;
  tokensPerSecond: number;
  computeSecondsPerToken: number;
  /** Cache management (bmoe's is in its summary, not in its `moe-stream:` line). */
  mgmtSecondsPerToken: number;
  ioSecondsPerToken: number;
  mibPerToken: number;
}

const NUM = String.raw`(-?\d+(?:\.\d+)?)`;
const GENERATION_RE = new RegExp(String.raw`^generation: (\d+) tokens, ${NUM} s/token \(${NUM} tok/s\)`, 'm');
const STREAM_RE = new RegExp(
  String.raw`^moe-stream: read ${NUM} MiB \(${NUM} MiB/token\), decode ${NUM} s/token \(compute ${NUM} \+ cache mgmt ${NUM} \+ flash I/O ${NUM} s/token`,
  'm',
);

/** The peer's numbers in its stdout, or null when a line is missing (a run that failed or a changed format). */
export function parseEdgeOutput(stdout: string): EdgeRun | null {
  const g = GENERATION_RE.exec(stdout);
  const s = STREAM_RE.exec(stdout);
  if (!g || !s) return null;
  return {
    tokens: Number(g[1]),
    secondsPerToken: Number(g[2]),
    tokensPerSecond: Number(g[3]),
    mibPerToken: Number(s[2]),
    computeSecondsPerToken: Number(s[4]),
    mgmtSecondsPerToken: Number(s[5]),
    ioSecondsPerToken: Number(s[6]),
  };
}

/**
 * The time a serial decode spends on anything but waiting for flash, s/token: decode − flash I/O.
 * The engines split the rest differently (what counts as compute, management, waits), so this
 * difference is what compares them.
 */
export function nonIoSecondsPerToken(r: { secondsPerToken: number; ioSecondsPerToken: number }): number {
  return r.secondsPerToken - r.ioSecondsPerToken;
}
