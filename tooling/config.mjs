// The build and test configuration every bmoe package shares, written once. Each package keeps a
// thin tsup.config.ts / vitest.config.ts (so the tools find it) that passes what differs to these.
// Plain ESM with a declaration file beside it (config.d.mts): the packages' tsconfig `rootDir` is
// the package, and a declaration file may live outside it where a .ts source may not.

/** tsup options: ESM for Node 20, source maps, declarations (of `dtsEntry` only, when given). */
export function tsupOptions({ entry, dtsEntry }) {
  return {
    entry,
    format: ['esm'],
    dts: dtsEntry === undefined ? true : { entry: dtsEntry },
    sourcemap: true,
    clean: true,
    target: 'node20',
  };
}

/**
 * vitest options: `test/**\/*.test.ts` in forked processes (the native addon is per process),
 * generous timeouts for the 2-core CI machine. Defaults: test 120 s, hooks 600 s, no global setup.
 */
export function vitestOptions({ globalSetup, testTimeout = 120_000, hookTimeout = 600_000 } = {}) {
  return {
    test: {
      include: ['test/**/*.test.ts'],
      ...(globalSetup === undefined ? {} : { globalSetup }),
      testTimeout,
      hookTimeout,
      pool: 'forks',
    },
  };
}
