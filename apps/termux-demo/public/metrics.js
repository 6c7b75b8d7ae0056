// The live metrics panel: rate tiles averaged over the last tokens' records (`bmoe.token`), device
// sensors from /api/state, and the per-token timing chart. Also the number formats the page shares.

const MiB = 1024 * 1024;
const RATE_WINDOW = 16; // tokens the rates average over
const CHART_TOKENS = 64; // tokens the chart shows

const $ = (id) => document.getElementById(id);
const el = {
  toks: $('m-toks'),
  flash: $('m-flash'),
  hit: $('m-hit'),
  cache: $('m-cache'),
  split: $('m-split'),
  splitCompute: $('split-compute'),
  splitIo: $('split-io'),
  mem: $('m-mem'),
  temp: $('m-temp'),
  chart: $('chart'),
  chartScale: $('chart-scale'),
};

/** Per-token records of the decodes seen (token 0 carries the prompt and is left out). */
let records = [];

// ---- formatting ---------------------------------------------------------------------------

export const fmt = (v, digits = 1) => (v === null || v === undefined || !Number.isFinite(v) ? '—' : v.toFixed(digits));
const fmtMiB = (bytes) => (bytes === null || bytes === undefined ? '—' : (bytes / MiB).toFixed(bytes >= 100 * MiB ? 0 : 1));
export const fmtGiB = (bytes) => `${(bytes / 1024 / MiB).toFixed(bytes >= 10 * 1024 * MiB ? 0 : 1)} GiB`;
export const fmtSize = (bytes) => (bytes >= 1024 * MiB ? fmtGiB(bytes) : `${Math.round(bytes / MiB)} MiB`);

// ---- records ------------------------------------------------------------------------------

/** Adds decoded tokens' records (those that arrived since the last frame) and redraws the panel once. */
export function pushRecords(tokens) {
  records.push(...tokens);
  if (records.length > 4 * CHART_TOKENS) records = records.slice(-CHART_TOKENS);
  renderPanel();
}

/** Forgets the records (a new model) and redraws the panel. */
export function clearRecords() {
  records = [];
  renderPanel();
}

// ---- panel --------------------------------------------------------------------------------

function sum(list, key) {
  let s = 0;
  for (const r of list) s += r[key] ?? 0;
  return s;
}

function setMetric(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/** Shows a MemAvailable reading (bytes). */
export function showMemAvailable(bytes) {
  setMetric(el.mem, fmtMiB(bytes));
}

function renderPanel() {
  const win = records.slice(-RATE_WINDOW);
  const last = records[records.length - 1];
  if (win.length > 0) {
    const wall = sum(win, 'wallMs');
    setMetric(el.toks, wall > 0 ? fmt((1000 * win.length) / wall, wall > 0 && (1000 * win.length) / wall >= 100 ? 0 : 1) : '—');
    setMetric(el.flash, fmt(sum(win, 'readBytes') / win.length / MiB, 1));
    const hits = sum(win, 'expertHits');
    const lookups = hits + sum(win, 'expertMisses');
    setMetric(el.hit, lookups > 0 ? `${Math.round((100 * hits) / lookups)}%` : '—');
    const compute = sum(win, 'computeMs');
    const io = sum(win, 'ioMs');
    const total = compute + io;
    const c = total > 0 ? (100 * compute) / total : 0;
    el.splitCompute.style.width = total > 0 ? `${c}%` : '0';
    el.splitIo.style.width = total > 0 ? `${100 - c}%` : '0';
    setMetric(el.split, total > 0 ? `compute ${Math.round(c)}% · flash ${Math.round(100 - c)}%` : 'compute — · flash —');
  }
  if (last) {
    setMetric(el.cache, fmtMiB(last.cacheResidentBytes));
    if (last.memAvailableBytes !== null && last.memAvailableBytes !== undefined) setMetric(el.mem, fmtMiB(last.memAvailableBytes));
  }
  drawChart();
}

/** The sensor tiles from /api/state; `generating`: tokens are streaming (they carry MemAvailable). */
export function renderSensors(s, generating) {
  if (!s) return;
  // While tokens stream, MemAvailable comes from each token's record; between turns from the poll.
  if (!generating && s.memAvailableBytes !== null) setMetric(el.mem, fmtMiB(s.memAvailableBytes));
  const cpu = s.cpuTempC === null ? '—' : Math.round(s.cpuTempC).toString();
  const bat = s.batteryTempC === null ? '—' : Math.round(s.batteryTempC).toString();
  setMetric(el.temp, `${cpu} · ${bat}`);
}

// ---- chart --------------------------------------------------------------------------------

export function drawChart() {
  const canvas = el.chart;
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(canvas.clientWidth * dpr));
  const h = Math.max(1, Math.round(canvas.clientHeight * dpr));
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  const ctx = canvas.getContext('2d');
  ctx.clearRect(0, 0, w, h);
  const data = records.slice(-CHART_TOKENS);
  if (data.length === 0) {
    el.chartScale.textContent = '';
    return;
  }
  const css = getComputedStyle(document.documentElement);
  const colors = { compute: css.getPropertyValue('--compute'), io: css.getPropertyValue('--io'), wall: css.getPropertyValue('--wall') };
  let max = 0;
  for (const r of data) max = Math.max(max, r.wallMs, r.computeMs + r.ioMs);
  max = max > 0 ? max * 1.1 : 1;
  const pad = 3 * dpr;
  const slot = (w - 2 * pad) / CHART_TOKENS;
  const barW = Math.max(1, slot * 0.72);
  const x0 = w - pad - data.length * slot;
  const y = (ms) => h - pad - (ms / max) * (h - 2 * pad);
  data.forEach((r, i) => {
    const x = x0 + i * slot + (slot - barW) / 2;
    const yc = y(r.computeMs);
    ctx.fillStyle = colors.compute;
    ctx.fillRect(x, yc, barW, h - pad - yc);
    const yi = y(r.computeMs + r.ioMs);
    ctx.fillStyle = colors.io;
    ctx.fillRect(x, yi, barW, yc - yi);
  });
  ctx.strokeStyle = colors.wall;
  ctx.lineWidth = 1.5 * dpr;
  ctx.beginPath();
  data.forEach((r, i) => {
    const x = x0 + i * slot + slot / 2;
    if (i === 0) ctx.moveTo(x, y(r.wallMs));
    else ctx.lineTo(x, y(r.wallMs));
  });
  ctx.stroke();
  el.chartScale.textContent = `top ${fmt(max, max >= 10 ? 0 : 1)} ms · last ${data.length}`;
}
