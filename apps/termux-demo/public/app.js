// bmoe demo page: chat over the server's OpenAI-compatible SSE stream, a live metrics panel fed by
// each chunk's per-token record (`bmoe.token`, metrics.js), device sensors polled from /api/state,
// a model picker, and photos for the models that take images (photos.js). Plain browser
// JavaScript modules served as-is: no build step, no network beyond this origin. The server's API
// (key, JSON, SSE) is in api.js.

import { apiFetch, getJson, sseData } from './api.js';
import { clearRecords, drawChart, fmt, fmtGiB, fmtSize, pushRecords, renderSensors, showMemAvailable } from './metrics.js';
import { PendingPhotos, photoView, saysImages } from './photos.js';

// Page address knobs: ?max_tokens=N (default 256) and ?temperature=T (default: the server's).
const params = new URLSearchParams(location.search);
const MAX_TOKENS = Number.parseInt(params.get('max_tokens') ?? '', 10) || 256;
const TEMPERATURE = params.has('temperature') ? Number(params.get('temperature')) : undefined;
const POLL_MS = 2000;

const $ = (id) => document.getElementById(id);
const el = {
  modelButton: $('model-button'),
  modelName: $('model-name'),
  modelMode: $('model-mode'),
  log: $('log'),
  empty: $('empty'),
  form: $('composer'),
  input: $('input'),
  attach: $('attach'),
  photoInput: $('photo-input'),
  photos: $('photos'),
  send: $('send'),
  stop: $('stop'),
  picker: $('picker'),
  pickerClose: $('picker-close'),
  pickerList: $('picker-list'),
  pickerDir: $('picker-dir'),
  pickerRam: $('picker-ram'),
};

/**
 * Conversation sent with every request (the server reuses the cached prefix). A user message with
 * photos keeps its `image_url` parts, so a later turn sends the same images again and the server
 * finds them in its cache instead of encoding them anew.
 */
const messages = [];
let state = { state: 'empty', model: null, sensors: null };
let generating = null; // { controller, bubble }
let polling = null;
/** The model (path) whose image support was asked, and the answer: the attach button. */
let imagesFor = null;
let takesImages = false;
const pending = new PendingPhotos(el.photos, () => renderState());

// ---- state, models ------------------------------------------------------------------------

function renderState() {
  const s = state;
  const model = s.model;
  el.modelName.textContent = s.state === 'loading' ? `loading ${s.loadingFile ?? ''}…` : model ? model.file : 'no model';
  const badge = s.state === 'loading' ? ['loading', 'loading'] : s.state === 'error' ? ['error', 'error'] : model?.settings ? [model.settings.mode, model.settings.mode === 'stream' ? 'streaming' : 'resident'] : null;
  el.modelMode.hidden = !badge;
  if (badge) {
    el.modelMode.className = `badge ${badge[0]}`;
    el.modelMode.textContent = badge[1];
  }
  el.attach.hidden = !takesImages || s.state !== 'ready';
  el.send.disabled = !canSend() || (el.input.value.trim() === '' && pending.count === 0);
  const hint = hintFor(s);
  el.empty.hidden = hint === null || messages.length > 0;
  if (hint !== null) el.empty.innerHTML = hint;
  renderSensors(s.sensors, !!generating);
}

/** A turn can begin: a model serves, none is generating, no photo is still being prepared. */
function canSend() {
  return state.state === 'ready' && !generating && pending.preparing === 0;
}

function esc(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

function hintFor(s) {
  if (s.state === 'empty') {
    return (
      `No model yet. Put a GGUF in <code>${esc(s.modelsDir)}</code> (on Termux's home, not /sdcard), e.g.<br>` +
      `<code>cp ~/storage/downloads/model.gguf ${esc(s.modelsDir)}/</code><br>or make the synthetic demo model:<br>` +
      `<code>bmoe make-model --preset demo-qwen3moe --out ${esc(s.modelsDir)}/demo-qwen3moe.gguf</code><br>then pick it above.`
    );
  }
  if (s.state === 'loading') return `Loading ${esc(s.loadingFile ?? 'the model')}…`;
  if (s.state === 'error') return `Could not load the model: ${esc(s.error ?? 'unknown error')}. Pick another one above.`;
  if (s.state === 'ready' && s.model?.settings) {
    return `${esc(s.model.file)}: ${esc(s.model.settings.reason)}. Say something${takesImages ? ', or send a photo' : ''}.`;
  }
  return null;
}

async function refreshState() {
  try {
    state = await getJson('/api/state');
  } catch (err) {
    // A missing key is said in the page; anything else, the next poll retries.
    if (err.status === 401) {
      el.empty.hidden = false;
      el.empty.textContent = `${err.message}. Open the address bmoe-demo printed (it ends in #key=…).`;
    }
    return;
  }
  renderState();
  checkImages();
}

function startPolling() {
  if (polling) return;
  polling = setInterval(refreshState, POLL_MS);
}

function settingsText(st) {
  const o = st.load;
  const parts = [`threads ${o.threads}`, `ctx ${o.contextSize}`];
  if (o.stream) {
    parts.unshift('--moe-stream');
    parts.push(o.stream.cacheMb === 'auto' ? `cache auto ≤ ${o.stream.cacheCeilMb} MiB` : `cache ${o.stream.cacheMb} MiB`);
    // overlap, routeAhead: true / false forced, 'auto' (the rule's choice) measured by the streamer.
    const mode = (v, name) => (v === 'auto' || v === undefined ? `${name} auto` : v ? name : `no ${name}`);
    parts.push(`lanes ${o.stream.ioThreads}`, mode(o.stream.overlap, 'overlap'), mode(o.stream.routeAhead, 'route-ahead'));
  } else {
    parts.unshift('resident');
  }
  return parts.join(' · ');
}

async function openPicker() {
  el.pickerList.innerHTML = '<li class="muted">reading the models folder…</li>';
  if (!el.picker.open) el.picker.showModal();
  let data;
  try {
    data = await getJson('/api/models');
  } catch (err) {
    el.pickerList.innerHTML = `<li class="muted">${esc(err.message)}</li>`;
    return;
  }
  el.pickerDir.textContent = data.dir;
  el.pickerRam.textContent = `RAM ${fmtGiB(data.device.memTotalBytes)}, ${data.device.cores} cores`;
  el.pickerList.innerHTML = '';
  if (data.models.length === 0) {
    el.pickerList.innerHTML = `<li class="muted">No .gguf files in ${esc(data.dir)}.</li>`;
    return;
  }
  for (const m of data.models) {
    const li = document.createElement('li');
    li.dataset.file = m.file;
    if (m.file === data.current) li.classList.add('current');
    const ram = data.device.memTotalBytes;
    const share = Math.min(100, (100 * m.fileBytes) / ram);
    const cls = m.settings?.tight ? 'tight' : m.settings?.mode === 'stream' ? 'over' : '';
    li.innerHTML =
      `<div class="row"><span class="file"></span><button type="button" class="load">Load</button></div>` +
      `<div class="ram" title="file size against RAM"><span class="${cls}" style="width:${share.toFixed(1)}%"></span></div>` +
      `<div class="facts"></div><div class="opts"></div><div class="why"></div>`;
    li.querySelector('.file').textContent = m.file;
    const facts = m.error
      ? m.error
      : `${fmtSize(m.fileBytes)} of ${fmtGiB(ram)} RAM (${Math.round((100 * m.fileBytes) / ram)}%) · ${m.architecture}, ${m.layers} layers` +
        (m.experts ? `, ${m.experts} experts top-${m.expertsUsed}, dense ${fmtSize(m.denseBytes)}` : '') +
        (m.projector ? ` · images: ${m.projector.file} (${fmtSize(m.projector.bytes)})` : '');
    li.querySelector('.facts').textContent = facts;
    li.querySelector('.opts').textContent = m.settings ? settingsText(m.settings) : '';
    li.querySelector('.why').textContent = m.settings ? m.settings.reason : '';
    const btn = li.querySelector('.load');
    btn.disabled = !m.settings || !!generating || state.state === 'loading';
    btn.textContent = m.file === data.current && state.state === 'ready' ? 'Loaded' : 'Load';
    if (m.file === data.current && state.state === 'ready') btn.disabled = true;
    btn.addEventListener('click', () => selectModel(m.file));
    el.pickerList.append(li);
  }
  if (data.unpairedProjectors?.length > 0) {
    const li = document.createElement('li');
    li.className = 'muted note';
    li.textContent =
      `${data.unpairedProjectors.join(', ')}: not used, as this folder holds several models. ` +
      'Put a vision model and its mmproj in a folder of their own inside it.';
    el.pickerList.append(li);
  }
}

async function selectModel(file) {
  try {
    state = await getJson('/api/models/select', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ file }),
    });
  } catch (err) {
    addError(err.message);
    return;
  }
  el.picker.close();
  messages.length = 0;
  el.log.querySelectorAll('.msg').forEach((n) => n.remove());
  renderState();
  clearRecords();
}

// ---- images -------------------------------------------------------------------------------

/** Asks the server, once per model loaded, whether it takes images: the attach button shows if so. */
async function checkImages() {
  const path = state.state === 'ready' ? (state.model?.path ?? null) : null;
  if (path === imagesFor) return;
  imagesFor = path;
  takesImages = false;
  renderState();
  if (path === null) return;
  const takes = await askImages();
  if (imagesFor !== path) return; // another model since
  takesImages = takes;
  // Photos picked for a model that took them cannot go to one that does not.
  if (!takes) pending.clear();
  renderState();
}

/** What /v1/models says of the model (its first entry), else llama-server's /props; no answer is no. */
async function askImages() {
  const models = await getJson('/v1/models').catch(() => null);
  const said = saysImages(models?.data?.[0]);
  if (said !== null) return said;
  return saysImages(await getJson('/props').catch(() => null)) ?? false;
}

// ---- chat ---------------------------------------------------------------------------------

function addBubble(role, text, photos = []) {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  if (photos.length > 0) {
    const row = document.createElement('div');
    row.className = 'photos';
    row.append(...photos.map(photoView));
    div.append(row);
  }
  const span = document.createElement('span');
  span.className = 'text';
  span.textContent = text;
  div.append(span);
  el.log.append(div);
  el.empty.hidden = true;
  scrollDown();
  return div;
}

function addError(text) {
  const div = document.createElement('div');
  div.className = 'msg error';
  div.textContent = text;
  el.log.append(div);
  scrollDown();
}

function scrollDown() {
  el.log.scrollTop = el.log.scrollHeight;
}

function setGenerating(g) {
  generating = g;
  el.send.hidden = !!g;
  el.stop.hidden = !g;
  renderState();
}

function statsLine(summary, usage, stopped) {
  if (!summary) return stopped ? 'stopped' : '';
  const parts = [`${usage?.completion_tokens ?? summary.tokens} tokens`, `${fmt(summary.tokensPerSecond)} tok/s`];
  if (summary.readMiB > 0) parts.push(`${fmt(summary.mibPerToken)} MiB/token from flash`);
  if (summary.hitPercent !== null) parts.push(`cache hit ${Math.round(summary.hitPercent)}%`);
  if (stopped) parts.push('stopped');
  return parts.join(' · ');
}

/**
 * A turn the server refused before it began (a photo it cannot read, a body too large, no model
 * yet): marked so in the chat, and back in the composer, photos and text, to send again or change.
 */
function backToComposer(userBubble, bubble, text, photos) {
  userBubble.classList.add('failed');
  bubble.remove();
  pending.restore(photos);
  if (el.input.value === '') el.input.value = text;
  autosize();
}

/** The content of a user turn: its text, or its photos as `image_url` parts (data URLs) and then its text. */
function userContent(text, photos) {
  if (photos.length === 0) return text;
  const parts = photos.map((p) => ({ type: 'image_url', image_url: { url: p.url } }));
  return text ? [...parts, { type: 'text', text }] : parts;
}

async function send(text, photos = []) {
  messages.push({ role: 'user', content: userContent(text, photos) });
  const userBubble = addBubble('user', text, photos);
  const bubble = addBubble('assistant', '');
  bubble.classList.add('streaming');
  const textNode = bubble.querySelector('.text');
  const controller = new AbortController();
  setGenerating({ controller, bubble });
  let reply = '';
  let summary = null;
  let usage = null;
  let stopped = false;
  let refused = false;
  // Tokens can arrive faster than a phone's browser lays out a growing reply: painting each one
  // (text, scroll, panel, chart) would queue work faster than the page does it and freeze it, Stop
  // included. So a chunk only updates the reply and the records, and one frame paints what came.
  let records = [];
  let frame = 0;
  const paint = () => {
    frame = 0;
    if (textNode.textContent !== reply) {
      textNode.textContent = reply;
      scrollDown();
    }
    if (records.length > 0) pushRecords(records);
    records = [];
  };
  const schedulePaint = () => {
    if (frame === 0) frame = requestAnimationFrame(paint);
  };
  try {
    const res = await apiFetch('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages, stream: true, stream_options: { include_usage: true, include_metrics: true }, max_tokens: MAX_TOKENS, temperature: TEMPERATURE }),
      signal: controller.signal,
    });
    if (!res.ok || !res.body) {
      const body = await res.json().catch(() => null);
      refused = true;
      throw new Error(body?.error?.message ?? `HTTP ${res.status}`);
    }
    for await (const data of sseData(res.body)) {
      if (data === '[DONE]') break;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message ?? 'the server reported an error');
      const delta = chunk.choices?.[0]?.delta?.content;
      if (delta) reply += delta;
      const token = chunk.bmoe?.token;
      if (token && token.tokenIndex > 0) records.push(token);
      else if (token && token.memAvailableBytes !== null) showMemAvailable(token.memAvailableBytes);
      if (chunk.usage) usage = chunk.usage;
      if (chunk.bmoe?.summary) summary = chunk.bmoe.summary;
      schedulePaint();
    }
  } catch (err) {
    if (err.name === 'AbortError') stopped = true;
    else addError(err.message);
  } finally {
    if (frame !== 0) cancelAnimationFrame(frame);
    paint();
    bubble.classList.remove('streaming');
    bubble.dataset.done = stopped ? 'stopped' : 'complete';
    if (reply) messages.push({ role: 'assistant', content: reply });
    else if (!stopped) messages.pop();
    if (refused) backToComposer(userBubble, bubble, text, photos);
    const line = statsLine(summary, usage, stopped);
    if (line) {
      const stats = document.createElement('span');
      stats.className = 'stats';
      stats.textContent = line;
      bubble.append(stats);
    }
    setGenerating(null);
    scrollDown();
    refreshState();
  }
}

// ---- wiring -------------------------------------------------------------------------------

el.form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const text = el.input.value.trim();
  if (!canSend() || (!text && pending.count === 0)) return;
  el.input.value = '';
  const photos = pending.take();
  autosize();
  send(text, photos);
});
el.input.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    el.form.requestSubmit();
  }
});
function autosize() {
  el.input.style.height = 'auto';
  el.input.style.height = `${Math.min(120, el.input.scrollHeight + 2)}px`;
  renderState();
}
el.input.addEventListener('input', autosize);
el.stop.addEventListener('click', () => generating?.controller.abort());
el.attach.addEventListener('click', () => el.photoInput.click());
el.photoInput.addEventListener('change', () => {
  const files = [...el.photoInput.files];
  el.photoInput.value = ''; // the same photo can be picked again
  pending.add(files, addError);
});
el.modelButton.addEventListener('click', openPicker);
el.pickerClose.addEventListener('click', () => el.picker.close());
window.addEventListener('resize', drawChart);

refreshState().then(startPolling);
