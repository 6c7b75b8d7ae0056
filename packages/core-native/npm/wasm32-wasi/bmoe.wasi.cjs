// @bmoe/core-native's wasm32-wasi build in Node.js: bmoe.wasm32-wasi.wasm (the addon compiled
// against emnapi, scripts/build-wasm.mjs) instantiated through @napi-rs/wasm-runtime (@emnapi/core)
// with node:wasi, the whole file system preopened at / so model paths work as given.
// One thread, resident models only (no mmap, no O_DIRECT, no expert streaming), at most 4 GiB of
// wasm memory. A trap (an exception inside llama.cpp) leaves this instance unusable: load again in a
// new process.
'use strict';
const { readFileSync } = require('node:fs');
const { join, parse, resolve } = require('node:path');
const { WASI } = require('node:wasi');
const { getDefaultContext, instantiateNapiModuleSync } = require('@napi-rs/wasm-runtime');

const root = parse(process.cwd()).root;
const wasi = new WASI({ version: 'preview1', env: process.env, preopens: { [root]: root }, returnOnExit: true });

const { napiModule } = instantiateNapiModuleSync(readFileSync(join(__dirname, 'bmoe.wasm32-wasi.wasm')), {
  context: getDefaultContext(),
  wasi,
  asyncWorkPoolSize: 0,
  overwriteImports(imports) {
    // Node 20 crashed (GC fatal error) when wasm called node:wasi's functions directly after its
    // memory grew; calling them through plain JS closures avoids it.
    const direct = imports.wasi_snapshot_preview1;
    const wrapped = {};
    for (const [name, fn] of Object.entries(direct)) wrapped[name] = typeof fn === 'function' ? (...a) => fn(...a) : fn;
    imports.wasi_snapshot_preview1 = wrapped;
    return imports;
  },
});

const binding = napiModule.exports;
const loadModel = binding.loadModel;
// wasi-libc resolves relative paths against "/", not the process's working directory.
binding.loadModel = (params) => loadModel({ ...params, path: typeof params?.path === 'string' ? resolve(params.path) : params?.path });
module.exports = binding;
