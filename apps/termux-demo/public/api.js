// Talking to the demo server: the API key the page sends on /api and /v1, JSON requests, and the
// `data:` payloads of an SSE stream.

// `bmoe-demo --api-key K` prints (and opens) http://127.0.0.1:8080/#key=K: the fragment never
// leaves the browser; the page keeps the key and sends it as a bearer token on /api and /v1.

const KEY_STORE = 'bmoe-demo-key';
const keyInHash = new URLSearchParams(location.hash.slice(1)).get('key');
if (keyInHash) {
  localStorage.setItem(KEY_STORE, keyInHash);
  history.replaceState(null, '', location.pathname + location.search);
}
let askedForKey = false;

function authHeaders(extra = {}) {
  const key = localStorage.getItem(KEY_STORE);
  return key ? { ...extra, authorization: `Bearer ${key}` } : extra;
}

/** A 401: the demo wants a key this page does not have (or has wrong); ask once per page load. */
function askForKey() {
  if (askedForKey) return false;
  askedForKey = true;
  const key = window.prompt('This bmoe demo needs its API key (the one given to bmoe-demo --api-key):');
  if (!key) return false;
  localStorage.setItem(KEY_STORE, key.trim());
  return true;
}

/** fetch with the key; on a 401, asks for the key once and tries again. */
export async function apiFetch(url, init = {}) {
  let res = await fetch(url, { ...init, headers: authHeaders(init.headers) });
  if (res.status === 401 && askForKey()) res = await fetch(url, { ...init, headers: authHeaders(init.headers) });
  return res;
}

/** The JSON body of a request; a failed one throws the server's message, with `status` set. */
export async function getJson(url, init) {
  const res = await apiFetch(url, init);
  const body = await res.json().catch(() => null);
  if (!res.ok) throw Object.assign(new Error(body?.error?.message ?? body?.message ?? `${url}: HTTP ${res.status}`), { status: res.status });
  return body;
}

/** Splits an SSE byte stream into the `data:` payloads of its events. */
export async function* sseData(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let cut;
    while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
      const event = buf.slice(0, cut);
      buf = buf.slice(cut).replace(/^\r?\n\r?\n/, '');
      const data = event
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) yield data;
    }
  }
}
