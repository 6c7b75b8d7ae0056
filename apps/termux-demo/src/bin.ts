#!/usr/bin/env node
// bmoe-demo: start the phone demo (page + model server on loopback), list the models folder with
// the settings each would load with, or probe a folder for O_DIRECT (setup.sh uses the last two).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { Command, InvalidArgumentError, Option } from 'commander';

const require = createRequire(import.meta.url);
const { version } = require('../package.json') as { version: string };


function fail(message: string): never {
  process.stderr.write(`bmoe-demo: error: ${message}\n`);
  process.exit(1);
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be an integer from 0 to 65535');
  return n;
}

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a non-negative integer');
  return n;
}

/** Opens the page in the phone's browser (Termux: termux-open-url; elsewhere xdg-open), best effort. */
function openBrowser(url: string): void {
  const termux = Boolean(process.env.TERMUX_VERSION) || (process.env.PREFIX ?? '').includes('com.termux');
  const child = spawn(termux ? 'termux-open-url' : 'xdg-open', [url], { stdio: 'ignore', detached: true });
  child.on('error', () => process.stderr.write(`bmoe-demo: could not open a browser; open ${url} yourself\n`));
  child.unref();
}

/** `a.lan, b.lan` → ['a.lan', 'b.lan']. */
function hostList(value: string): string[] {
  return value
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
}

interface StartFlags {
  models?: string;
  model?: string;
  host: string;
  allowedHosts?: string[];
  apiKey?: string;
  port: number;
  maxQueue?: number;
  open?: boolean;
}

async function start(flags: StartFlags): Promise<void> {
  const { startDemo } = await import('./demo.js');
  const { defaultModelsDir } = await import('./paths.js');
  const modelsDir = flags.models ?? defaultModelsDir();
  const log = (line: string): void => void process.stderr.write(`bmoe-demo: ${line}\n`);
  const demo = await startDemo({
    modelsDir,
    host: flags.host,
    port: flags.port,
    log,
    // An empty BMOE_API_KEY means none.
    ...(flags.apiKey ? { apiKey: flags.apiKey } : {}),
    ...(flags.allowedHosts ? { allowedHosts: flags.allowedHosts } : {}),
    ...(flags.model !== undefined ? { model: flags.model } : {}),
    ...(flags.maxQueue !== undefined ? { maxQueue: flags.maxQueue } : {}),
  }).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
  if (flags.host !== '127.0.0.1' && flags.host !== 'localhost' && flags.host !== '::1' && !flags.apiKey) {
    log(`warning: listening on ${flags.host}: anyone who can reach this address can use the model (set --api-key)`);
  }
  // The page takes the key from the address's fragment (never sent to a server) and keeps it.
  const pageUrl = flags.apiKey ? `${demo.url}#key=${encodeURIComponent(flags.apiKey)}` : demo.url;
  process.stdout.write(`bmoe demo: open ${pageUrl} in the phone's browser (models: ${modelsDir}; Ctrl-C stops)\n`);
  if (flags.open) openBrowser(pageUrl);
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    demo.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const s = await demo.settled();
  if (s.state === 'empty') log(`no GGUF in ${modelsDir} yet: the page explains how to add one`);
}

async function models(flags: { models?: string; json?: boolean }): Promise<void> {
  const { listModelsFolder } = await import('./models.js');
  const { readDeviceFacts } = await import('./device.js');
  const { defaultModelsDir } = await import('./paths.js');
  const { formatSize, usableBytes, runFlags } = await import('./settings.js');
  const dir = flags.models ?? defaultModelsDir();
  const device = readDeviceFacts();
  const { models: list, unpairedProjectors } = await listModelsFolder(dir, device);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ dir, device, models: list, unpairedProjectors }, null, 2)}\n`);
    return;
  }
  const usable = usableBytes(device);
  process.stdout.write(`${dir}: ${list.length} model(s); RAM ${formatSize(device.memTotalBytes)}, ${device.cores} cores, the demo may hold ${formatSize(usable)}\n`);
  for (const m of list) {
    if (!m.settings) {
      process.stdout.write(`  ${m.file}: ${m.error ?? 'unreadable'}\n`);
      continue;
    }
    // `bmoe run` would take an mmproj*.gguf beside the model that the demo leaves alone.
    const mmproj = m.projector ? m.projector.path : unpairedProjectors.length > 0 && !m.file.includes('/') ? 'none' : undefined;
    const load = mmproj === undefined ? m.settings.load : { ...m.settings.load, mmproj };
    process.stdout.write(`  ${m.file}  ${formatSize(m.fileBytes)}  ${m.settings.mode}  ${runFlags(load).join(' ')}\n    ${m.settings.reason}\n`);
  }
  if (unpairedProjectors.length > 0) {
    process.stdout.write(`  ${unpairedProjectors.join(', ')}: not used, the folder holds several models (put a vision model and its mmproj in a folder of their own inside it)\n`);
  }
}

async function probe(dir: string | undefined, flags: { json?: boolean }): Promise<void> {
  const { probeODirect } = await import('./probe.js');
  const { defaultModelsDir } = await import('./paths.js');
  const r = await probeODirect(dir ?? defaultModelsDir()).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
  process.stdout.write(flags.json ? `${JSON.stringify(r)}\n` : `${r.detail}\n`);
  process.exitCode = r.odirect ? 0 : 3;
}

const program = new Command('bmoe-demo')
  .description('bmoe phone demo: a chat page with live expert-streaming metrics, served on loopback')
  .version(version)
  .enablePositionalOptions()
  .option('--models <dir>', 'folder of GGUF models (default: $BMOE_MODELS_DIR or ~/bmoe/models)')
  .option('--model <file>', "model to load first: a file name in the folder or a path (default: the folder's first)")
  .option('--host <addr>', 'interface to listen on', '127.0.0.1')
  .option('--allowed-hosts <names>', 'Host names to answer besides localhost, 127.0.0.1, [::1] and --host (comma-separated); others get 403', hostList)
  .addOption(new Option('--api-key <key>', 'require Authorization: Bearer <key> on /api, /v1 and /metrics (the page is opened with it)').env('BMOE_API_KEY'))
  .option('--port <n>', 'port of the page and the API', port, 8080)
  .option('--max-queue <n>', 'requests allowed to wait behind the running one', nonNegativeInt)
  .option('--open', "open the page in the phone's browser (termux-open-url)")
  .action(start);

program
  .command('models')
  .description('list the GGUFs of the models folder with the settings the demo would load each with')
  .option('--models <dir>', 'folder of GGUF models (default: $BMOE_MODELS_DIR or ~/bmoe/models)')
  .option('--json', 'print JSON')
  .action(models);

program
  .command('probe')
  .description('check that a folder supports O_DIRECT reads as the streamer does them (exit 3 when it does not)')
  .argument('[dir]', 'folder to probe (default: the models folder)')
  .option('--json', 'print JSON')
  .action(probe);

program.parseAsync().catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
