// Model references `bmoe pull` (and run, chat, serve, bench) accept instead of a file path:
//   hf:owner/repo[@revision][:QUANT]      a repository's GGUF of that quant (Q4_K_M, q8_0, ...)
//   hf:owner/repo[@revision]/path/f.gguf  one file of a repository (every shard, if split)
//   https://host/path/f.gguf              a plain URL (http:// too, for local mirrors)

/** A pull that failed: one line saying what and where (the CLI prints it as `bmoe: error: ...`). */
export class PullError extends Error {
  override name = 'PullError';
}

export type ModelRef =
  | { kind: 'hf'; text: string; repo: string; revision: string; quant: string | null; file: string | null }
  | { kind: 'url'; text: string; url: URL };

const REPO_PART = /^[A-Za-z0-9][\w.-]*$/;

/** True when `arg` is a reference (hf:… or an http(s) URL) rather than a local path. */
export function isModelRef(arg: string): boolean {
  return arg.startsWith('hf:') || /^https?:\/\//i.test(arg);
}

/** Parses a reference; throws PullError naming what is wrong with it. */
export function parseModelRef(text: string): ModelRef {
  if (/^https?:\/\//i.test(text)) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new PullError(`'${text}' is not a valid URL`);
    }
    if (!/\.gguf$/i.test(url.pathname)) throw new PullError(`${text} does not name a .gguf file`);
    return { kind: 'url', text, url };
  }
  if (!text.startsWith('hf:')) throw new PullError(`'${text}' is not a model reference (hf:owner/repo[:QUANT], hf:owner/repo/file.gguf or an https URL)`);
  return parseHfRef(text);
}

function parseHfRef(text: string): ModelRef {
  const usage = `'${text}' is not a Hugging Face reference: hf:owner/repo[:QUANT] or hf:owner/repo/path/file.gguf`;
  const parts = text.slice(3).split('/');
  const [owner, repoPart = ''] = parts;
  let rest = parts.slice(2).join('/');
  let name = repoPart;
  let quant: string | null = null;
  if (parts.length === 2) {
    const colon = repoPart.indexOf(':');
    if (colon >= 0) {
      quant = repoPart.slice(colon + 1);
      name = repoPart.slice(0, colon);
      if (!/^[\w.-]+$/.test(quant)) throw new PullError(`${usage} ('${quant}' is not a quant name)`);
    }
  }
  let revision = 'main';
  const at = name.indexOf('@');
  if (at >= 0) {
    revision = name.slice(at + 1);
    name = name.slice(0, at);
    if (revision === '') throw new PullError(`${usage} (empty revision after @)`);
  }
  if (!owner || !REPO_PART.test(owner) || !REPO_PART.test(name)) throw new PullError(usage);
  if (parts.length > 2) {
    checkRepoPath(rest, text);
    if (!/\.gguf$/i.test(rest)) throw new PullError(`${text} does not name a .gguf file`);
  } else {
    rest = '';
  }
  return { kind: 'hf', text, repo: `${owner}/${name}`, revision, quant, file: rest === '' ? null : rest };
}

/** Refuses paths that could leave the models folder or are not plain relative paths. */
export function checkRepoPath(path: string, where: string): void {
  const segments = path.split('/');
  if (path === '' || path.includes('\\') || path.includes('\0') || segments.some((s) => s === '' || s === '.' || s === '..')) {
    throw new PullError(`${where}: '${path}' is not a plain file path inside the repository`);
  }
}
