// The planted structure of a synthetic model's tensor data: the per-model context the fills
// share (fill.ts), built from the tokenizer's candidates and the preset's tuning (design.md,
// "Making synthetic models behave").
//
// Planted structure.
// 1. Successors: every real token t has two successors succ(t) among "candidate" tokens (whole
//    words and punctuation from the tokenizer corpus; never a control, end-of-generation or
//    padding token), arranged on a ring so greedy text cannot fall into a short cycle, and
//    with candidate embeddings orthogonal to their ring neighbours (plantSuccessors,
//    candidateDirections). Output row s is
//        out_s = (G / n) · Σ_{candidates t : s ∈ succ(t)} ũ_t + noise,
//    where ũ_t is t's embedding as llama.cpp dequantizes it (shared direction removed, RMS 1).
//    While the residual stream carries the current token's embedding, its two successors score
//    ≈ G·cos(ũ_t, h) — exactly tied as far as ũ_t goes — and every other token ≈ noise, so the
//    layers (attention over the context, the routed experts) decide which successor wins: the
//    text keeps moving and depends on routing. Non-candidate tokens are aliases of a candidate.
// 2. Layer balance: attention and MoE each add a controlled share of the residual stream
//    (Tuning.attn, Tuning.moe), and routing is kept fairly flat (Tuning.routerLogitStd) so the
//    last of the top-k experts carries real weight: running one expert fewer changes the greedy
//    text within a few tokens (checked against llama.cpp, see test/llama.test.ts).
// 3. Router skew (routerSkew = X ≥ 0): in every MoE layer l, expert e gets the logit bias
//        −X · ln(1 + rank_l(e)),
//    where rank_l is a seeded random permutation of the experts. Before top-k selection this
//    multiplies expert e's routing weight by (1 + rank)^−X: a Zipf popularity with exponent X
//    over a different expert order per layer; X = 0 is plain random routing. gpt-oss has a
//    router bias, which carries the skew exactly; deepseek4 has a selection bias added to its
//    sqrt(softplus) scores (carried approximately, scaled by their slope at 0) and, in its
//    hash-routed layers, token → expert tables drawn with the same Zipf weights.
//    qwen3moe, qwen35moe and gemma4 have no router bias, so the skew
//    rides on a direction c shared by every token embedding (magnitude Tuning.sharedDirection
//    of their RMS): router rows are made orthogonal to c and then get the bias along c, scaled
//    so it is exact for the first layer's input; deeper layers see it diluted in proportion to
//    how much the residual stream has grown away from the embedding.

import { decode, encode } from '../quant/index.js';
import type { ModelPlan, PlannedTensor } from './plan.js';
import { blockKey, gauss, streamKey, word } from './prng.js';

/** Precomputed per-model data the fills share. */
export interface FillContext {
  readonly plan: ModelPlan;
  /** the shared direction c (±1 per element), length n_embd */
  readonly c: Float32Array;
  /** effective share of c in a normalized embedding: c·x/n */
  readonly muEff: number;
  /** encoded embedding rows of live tokens (llama.cpp reads exactly these bytes) */
  readonly liveEmbd: readonly Uint8Array[];
  /** ũ_t of live tokens: dequantized embedding, c removed, RMS 1 */
  readonly liveDir: readonly Float32Array[];
  /** the planted successor structure */
  readonly successors: Successors;
  /** candidate predecessors of each token that is some candidate's successor */
  readonly predecessors: ReadonlyMap<number, readonly number[]>;
}

/** Per-layer popularity rank of each expert (a seeded permutation). */
export function expertRanks(seed: number, layer: number, nExpert: number): Int32Array {
  const key = blockKey(streamKey(seed, 'expert-popularity'), layer);
  const perm = Int32Array.from({ length: nExpert }, (_, i) => i);
  for (let i = nExpert - 1; i > 0; i--) {
    const j = Math.floor((word(key, i) / 4294967296) * (i + 1));
    const tmp = perm[i]!;
    perm[i] = perm[j]!;
    perm[j] = tmp;
  }
  // perm[r] = expert with rank r; invert to rank[e].
  const rank = new Int32Array(nExpert);
  for (let r = 0; r < nExpert; r++) rank[perm[r]!] = r;
  return rank;
}

/** The router logit bias of every expert in a layer: −X·ln(1 + rank). */
export function routerBias(seed: number, layer: number, nExpert: number, skew: number): Float32Array {
  const rank = expertRanks(seed, layer, nExpert);
  return Float32Array.from(rank, (r) => (skew === 0 ? 0 : -skew * Math.log(1 + r)));
}

/** How far ahead on the ring a candidate's successors lie (1..RING_STEP). */
const RING_STEP = 4;

export interface Successors {
  /** succ(t) for every live token */
  readonly succ: readonly (readonly [number, number])[];
  /** for a non-candidate live token, the candidate whose embedding it shares; else -1 */
  readonly alias: Int32Array;
  /** the candidates in ring order */
  readonly ring: readonly number[];
}

/**
 * The planted successor structure. Candidates sit on a seeded random ring and each one's two
 * successors lie 1..RING_STEP places ahead of it, so greedy text walks forward around the
 * ring and cannot repeat itself in fewer than |candidates| / RING_STEP tokens (~100 with the
 * built-in vocab); with random successors it falls into short cycles ("a b c a b c") that the
 * then-periodic context keeps it in. Every other real token (control, byte, word fragment) is
 * an alias of a random candidate: it shares that candidate's embedding direction and hence
 * its successors, without adding terms to any output row (which would blur the near-ties).
 */
export function plantSuccessors(seed: number, live: number, candidates: readonly number[]): Successors {
  const C = candidates.length;
  if (C < 2 * RING_STEP) throw new Error('internal: too few successor candidates');
  const ringKey = streamKey(seed, 'successor-ring');
  const ring = [...candidates];
  for (let i = C - 1; i > 0; i--) {
    const j = Math.floor((word(ringKey, i) / 4294967296) * (i + 1));
    const tmp = ring[i]!;
    ring[i] = ring[j]!;
    ring[j] = tmp;
  }
  const pos = new Map<number, number>(ring.map((t, i) => [t, i]));
  const stream = streamKey(seed, 'successors');
  const succ: [number, number][] = [];
  const alias = new Int32Array(live).fill(-1);
  const ringSucc = (p: number, key: number): [number, number] => {
    const d1 = 1 + Math.floor((word(key, 0) / 4294967296) * RING_STEP);
    let d2 = 1 + Math.floor((word(key, 1) / 4294967296) * (RING_STEP - 1));
    if (d2 >= d1) d2++;
    return [ring[(p + d1) % C]!, ring[(p + d2) % C]!];
  };
  for (let t = 0; t < live; t++) {
    const p = pos.get(t);
    if (p !== undefined) {
      succ.push(ringSucc(p, blockKey(stream, t)));
    } else {
      const a = ring[Math.floor((word(blockKey(stream, t), 2) / 4294967296) * C)]!;
      alias[t] = a;
      succ.push(ringSucc(pos.get(a)!, blockKey(stream, a)));
    }
  }
  return { succ, alias, ring };
}

function sharedDirection(seed: number, n: number): Float32Array {
  const key = streamKey(seed, 'shared-direction');
  return Float32Array.from({ length: n }, (_, i) => ((word(key, i >>> 5) >>> (i & 31)) & 1 ? 1 : -1));
}

function embeddingTensor(plan: ModelPlan): PlannedTensor {
  const t = plan.tensors.find((x) => x.name === 'token_embd.weight');
  if (!t || t.fill.kind !== 'embedding') throw new Error('internal: plan has no token embedding');
  return t;
}

/** Relative size of an alias token's own noise on top of its candidate's embedding. */
const ALIAS_NOISE = 0.3;
/** Ring neighbours a candidate's direction is made orthogonal to (> 2·RING_STEP − 2). */
const ORTHO_SPAN = 2 * RING_STEP - 1;

/**
 * Unit-RMS directions of the candidates' embeddings, in ring order. Each is made orthogonal to
 * the shared direction and to its ORTHO_SPAN ring neighbours: the other predecessors of a
 * token's two successors are all within that span, so with the current token's embedding
 * alone the two successors tie exactly and only the layers decide between them. (Random
 * directions would leave a fixed bias per token that the routed experts rarely overturn.)
 */
function candidateDirections(seed: number, n: number, c: Float32Array, ring: readonly number[]): Float32Array[] {
  const stream = streamKey(seed, 'token_embd.weight/live');
  const C = ring.length;
  const dirs: Float32Array[] = new Array<Float32Array>(C);
  const cUnit = Float32Array.from(c, (x) => x / Math.sqrt(n));
  for (let p = 0; p < C; p++) {
    const key = blockKey(stream, ring[p]!);
    const v = Float64Array.from({ length: n }, (_, i) => gauss(key, i));
    // Neighbours generated before p: the previous ORTHO_SPAN, and near the end of the ring the
    // first ones (wrap-around). Orthonormalize them, then project them out of v.
    const basis: Float64Array[] = [Float64Array.from(cUnit)];
    const neighbours: number[] = [];
    for (let d = 1; d <= ORTHO_SPAN; d++) {
      if (p - d >= 0) neighbours.push(p - d);
      if (p + d >= C && (p + d) % C < p) neighbours.push((p + d) % C);
    }
    for (const q of neighbours) {
      const w = Float64Array.from(dirs[q]!);
      for (const b of basis) {
        let dot = 0;
        for (let i = 0; i < n; i++) dot += w[i]! * b[i]!;
        for (let i = 0; i < n; i++) w[i] = w[i]! - dot * b[i]!;
      }
      let norm = 0;
      for (let i = 0; i < n; i++) norm += w[i]! * w[i]!;
      norm = Math.sqrt(norm);
      if (norm > 1e-6) basis.push(w.map((x) => x / norm));
    }
    for (const b of basis) {
      let dot = 0;
      for (let i = 0; i < n; i++) dot += v[i]! * b[i]!;
      for (let i = 0; i < n; i++) v[i] = v[i]! - dot * b[i]!;
    }
    let ss = 0;
    for (let i = 0; i < n; i++) ss += v[i]! * v[i]!;
    const k = 1 / Math.sqrt(ss / n);
    dirs[p] = Float32Array.from(v, (x) => x * k);
  }
  return dirs;
}

/** Float embedding of a live token: its direction scaled to the embedding RMS, plus the shared direction. */
function embeddingRow(dir: Float32Array, c: Float32Array, rms: number, mu: number): Float32Array {
  const sz = rms / Math.sqrt(1 + mu * mu);
  return Float32Array.from(dir, (x, i) => sz * (x + mu * c[i]!));
}

export function buildFillContext(plan: ModelPlan): FillContext {
  const n = plan.shape.nEmbd;
  const mu = plan.preset.tuning.sharedDirection;
  const c = sharedDirection(plan.seed, n);
  const embd = embeddingTensor(plan);
  const rms = embd.fill.kind === 'embedding' ? embd.fill.rms : 1;
  const liveCount = plan.vocab.live.length;
  const successors = plantSuccessors(plan.seed, liveCount, plan.vocab.candidates);
  // Directions: candidates from the ring; aliases = their candidate's direction + own noise.
  const ringDirs = candidateDirections(plan.seed, n, c, successors.ring);
  const dirOf = new Map<number, Float32Array>(successors.ring.map((t, p) => [t, ringDirs[p]!]));
  const aliasStream = streamKey(plan.seed, 'token_embd.weight/alias');
  const liveEmbd: Uint8Array[] = [];
  const liveDir: Float32Array[] = [];
  for (let t = 0; t < liveCount; t++) {
    const a = successors.alias[t]!;
    let dir = dirOf.get(a >= 0 ? a : t);
    if (!dir) throw new Error(`internal: live token ${t} has no direction`);
    if (a >= 0) {
      const key = blockKey(aliasStream, t);
      const k = 1 / Math.sqrt(1 + ALIAS_NOISE * ALIAS_NOISE);
      const base = dir;
      dir = Float32Array.from(base, (x, i) => (x + ALIAS_NOISE * gauss(key, i)) * k);
    }
    const bytes = encode(embd.type, embeddingRow(dir, c, rms, mu));
    liveEmbd.push(bytes);
    // ũ_t: what llama.cpp will actually see, shared direction removed, RMS 1.
    const u = decode(embd.type, bytes, n);
    let dot = 0;
    for (let i = 0; i < n; i++) dot += u[i]! * c[i]!;
    const proj = dot / n;
    let ss = 0;
    for (let i = 0; i < n; i++) {
      u[i] = u[i]! - proj * c[i]!;
      ss += u[i]! * u[i]!;
    }
    const inv = ss > 0 ? 1 / Math.sqrt(ss / n) : 0;
    for (let i = 0; i < n; i++) u[i] = u[i]! * inv;
    liveDir.push(u);
  }
  // Only candidates (ring members) feed output rows; aliases ride on their candidate.
  const predecessors = new Map<number, number[]>();
  successors.succ.forEach((pair, t) => {
    if (successors.alias[t]! >= 0) return;
    for (const s of pair) {
      const list = predecessors.get(s) ?? [];
      list.push(t);
      predecessors.set(s, list);
    }
  });
  return { plan, c, muEff: mu / Math.sqrt(1 + mu * mu), liveEmbd, liveDir, successors, predecessors };
}
