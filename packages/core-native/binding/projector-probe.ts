// A projector (mmproj) loaded once in a child process before the caller loads it: llama.cpp's
// projector code checks the tensors against the file's metadata only when it builds an image's
// graph, and aborts the whole process on a contradiction (GGML_ASSERT) — one changed number in a
// file would otherwise kill a server at its first image. The child loads the model's vocabulary
// only and the projector with its warm-up encode (NativeBinding.probeProjector); its death or
// refusal becomes one line here.
import { spawn } from 'node:child_process';

export interface ProjectorProbeOptions {
  /** Encoder threads of the warm-up. Default 1. */
  threads?: number;
  /** The child is killed after this long. Default 10 minutes (a phone reading a big projector). */
  timeoutMs?: number;
}

/**
 * How the child runs Node: this process's own binary, or BMOE_NODE (an argv prefix, space-separated)
 * where that cannot be executed directly — an arm64 Node under qemu-user without binfmt, whose
 * child would be handed to /bin/sh.
 */
export function probeNodeCommand(env: NodeJS.ProcessEnv = process.env): string[] {
  const given = env.BMOE_NODE?.trim();
  return given ? given.split(/\s+/) : [process.execPath];
}

/** In the child: load the binding this module belongs to and probe. */
const CHILD = `
const { loadBinding } = await import(process.env.BMOE_PROBE_BINDING);
try {
  loadBinding().probeProjector(process.env.BMOE_PROBE_MODEL, process.env.BMOE_PROBE_MMPROJ, Number(process.env.BMOE_PROBE_THREADS));
  process.stdout.write('ok');
} catch (e) {
  process.stdout.write('refused:' + (e instanceof Error ? e.message : String(e)));
}`;

/** The line llama.cpp printed before it aborted (a GGML_ASSERT, an error), without its source path. */
function abortLine(stderr: string): string {
  const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
  const hit = [...lines].reverse().find((l) => /GGML_ASSERT|GGML_ABORT|error|terminate called|what\(\)/i.test(l));
  return (hit ?? lines.at(-1) ?? '').replace(/^.*?\/ggml\/src\//, 'ggml/src/').slice(0, 300);
}

/**
 * '' when the projector loads for this model and encodes an image; else one line saying why
 * (llama.cpp's refusal, or how its code stopped on the file). Never throws for a bad file.
 */
export function probeProjector(modelPath: string, mmprojPath: string, opts: ProjectorProbeOptions = {}): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 600_000;
  return new Promise((resolve) => {
    const [node, ...prefix] = probeNodeCommand();
    const child = spawn(node!, [...prefix, '--input-type=module', '-e', CHILD], {
      env: {
        ...process.env,
        BMOE_PROBE_BINDING: import.meta.url,
        BMOE_PROBE_MODEL: modelPath,
        BMOE_PROBE_MMPROJ: mmprojPath,
        BMOE_PROBE_THREADS: String(opts.threads ?? 1),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.length > 1 << 20) err = err.slice(-(1 << 16));
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve(`could not start the projector check: ${e.message}`);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (out === 'ok') return resolve('');
      if (out.startsWith('refused:')) return resolve(out.slice('refused:'.length).split('\n')[0]!);
      if (signal === 'SIGKILL') return resolve(`loading it took longer than ${Math.round(timeoutMs / 1000)} s (or ran out of memory) in the check`);
      const why = abortLine(err);
      resolve(`llama.cpp's projector code stopped on this file (${signal ?? `exit ${code}`}${why ? `: ${why}` : ''})`);
    });
  });
}
