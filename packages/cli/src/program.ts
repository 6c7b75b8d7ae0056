// The command tree. Subcommands are created with program.command() so they inherit
// exitOverride and the output settings: main() decides exit codes, nothing calls process.exit.
import { createRequire } from 'node:module';
import { Command } from 'commander';
import type { CliContext } from './context.js';
import { registerBench } from './commands/bench.js';
import { registerChat } from './commands/chat.js';
import { registerDemo } from './commands/demo.js';
import { registerInfo } from './commands/info.js';
import { registerMakeImage } from './commands/make-image.js';
import { registerMakeModel } from './commands/make-model.js';
import { registerNative } from './commands/native.js';
import { registerPull } from './commands/pull.js';
import { registerRun } from './commands/run.js';
import { registerServe } from './commands/serve.js';

const pkg = createRequire(import.meta.url)('../package.json') as { version: string };

export function buildProgram(ctx: CliContext): Command {
  const program = new Command('bmoe')
    .description('expert-streaming inference for Mixture-of-Experts GGUF models larger than RAM')
    .version(pkg.version, '-V, --version')
    .exitOverride()
    .showSuggestionAfterError(true)
    // `bmoe bench ...` hands everything after `bench` to the bench's own parser.
    .enablePositionalOptions();
  registerRun(program, ctx);
  registerChat(program, ctx);
  registerServe(program, ctx);
  registerInfo(program, ctx);
  registerMakeModel(program, ctx);
  registerMakeImage(program, ctx);
  registerPull(program, ctx);
  registerDemo(program, ctx);
  registerBench(program, ctx);
  registerNative(program, ctx);
  return program;
}
