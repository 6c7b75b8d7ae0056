// `bmoe demo`: makes the demo model once (cached under XDG_CACHE_HOME) and generates from it.
import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { formatBytes } from '../format.js';
import { tableOption } from '../model-options.js';

export const DEMO_PRESET = 'demo-qwen3moe';
const DEMO_PROMPT = 'The quick brown fox';

/** `${XDG_CACHE_HOME:-~/.cache}/bmoe/models/demo-qwen3moe.gguf` */
export function demoModelPath(env: NodeJS.ProcessEnv = process.env): string {
  const cache = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cache, 'bmoe', 'models', `${DEMO_PRESET}.gguf`);
}

export function registerDemo(program: Command, ctx: CliContext): void {
  program
    .command('demo')
    .description(`generate from a synthetic ${DEMO_PRESET} model (made once, then cached)`)
    .option('--model <file>', 'use this GGUF instead of the cached demo model')
    .addOption(tableOption('maxTokens', { defaultText: '64' }))
    .action(async (flags: { model?: string; nPredict?: number }) => {
      const { inspectModel } = await import('@bmoe/engine');
      const { runGeneration } = await import('../run-loop.js');
      const path = flags.model ?? (await ensureDemoModel());
      const info = await inspectModel(path);
      const n = flags.nPredict ?? 64;
      const cacheMb = demoCacheMb(info.workingSetBytes, info.expertBytes);
      ctx.exitCode = await runGeneration({
        model: path,
        prompt: DEMO_PROMPT,
        chat: false,
        // Streamed, with an expert cache smaller than the experts: what bmoe does for a model
        // larger than memory, on a model small enough to make here.
        load: { stream: { moeStream: true, cacheMb } },
        generate: { maxTokens: n },
        json: false,
        intro:
          `bmoe demo: ${info.architecture}, ${info.layers} layers, ${info.experts} experts (top-${info.expertsUsed}), ` +
          `${formatBytes(info.fileBytes)} of synthetic weights: dense ${formatBytes(info.denseBytes)} held in memory, ` +
          `experts ${formatBytes(info.expertBytes)} streamed from disk through a ${cacheMb} MiB cache; ` +
          `${n} greedy tokens after "${DEMO_PROMPT}":`,
        outro: (s) => {
          const perToken = s.mibPerToken * 1024 * 1024;
          const share = info.expertBytes > 0 ? (100 * perToken) / info.expertBytes : 0;
          return (
            `bmoe demo: each token read ${formatBytes(perToken)} of experts from disk (${share.toFixed(1)} % of them), ` +
            `the cache answered ${s.hitPercent === null ? 'n/a' : s.hitPercent.toFixed(1)} % of expert lookups and held ${s.residentMiB.toFixed(1)} MiB; ` +
            `the other ${formatBytes(Math.max(0, info.expertBytes - s.residentMiB * 1024 * 1024))} of experts stayed on disk.`
          );
        },
      });
    });
}

/** A cache of about a third of the experts, never below two tokens' working sets. */
export function demoCacheMb(workingSetBytes: number, expertBytes: number): number {
  const MiB = 1024 * 1024;
  return Math.ceil(Math.max(2 * workingSetBytes, expertBytes / 3) / MiB);
}

/** The cached demo model, made when missing or unreadable. */
async function ensureDemoModel(): Promise<string> {
  const { inspectModel } = await import('@bmoe/engine');
  const { makeWithProgress } = await import('../make.js');
  const path = demoModelPath();
  try {
    await inspectModel(path);
    return path;
  } catch {
    // Missing or damaged (e.g. an older format): make it again.
  }
  await mkdir(dirname(path), { recursive: true });
  process.stderr.write(`bmoe demo: making the demo model once at ${path}\n`);
  await makeWithProgress({ preset: DEMO_PRESET, out: path }, 'demo model');
  return path;
}
