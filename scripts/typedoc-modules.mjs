// TypeDoc plugin (typedoc.json): names each entry point's module after the import path users write
// (`@bmoe/engine`, `@bmoe/engine/options`, …) instead of its source path (`engine/src/options`).
// The name comes from the package's own package.json: the `exports` key whose `types` file is the
// one tsup builds from that source (src/x/index.ts → ./dist/x/index.d.ts). An entry point that is
// no export of its package is an error: docs/api documents published entry points only.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { Converter, ReflectionKind } from 'typedoc';

/** The package.json above `file`: its directory and parsed content. */
function packageOf(file) {
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      return { dir, json: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) };
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
  }
  return undefined;
}

/** `@scope/pkg/sub` for a source file under the package's src/, or undefined when it is no export. */
export function importPathOf(file) {
  const pkg = packageOf(file);
  if (!pkg) return undefined;
  const rel = relative(pkg.dir, file).split(sep).join('/');
  if (!rel.startsWith('src/')) return undefined;
  const types = `./dist/${rel.slice('src/'.length).replace(/\.ts$/, '.d.ts')}`;
  for (const [key, target] of Object.entries(pkg.json.exports ?? {})) {
    if (target?.types === types) return key === '.' ? pkg.json.name : `${pkg.json.name}${key.slice(1)}`;
  }
  return undefined;
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context, reflection) => {
    if (!reflection.kindOf(ReflectionKind.Module) || reflection.parent !== context.project) return;
    const file = context.getSymbolFromReflection(reflection)?.declarations?.[0]?.getSourceFile().fileName;
    const name = file === undefined ? undefined : importPathOf(file);
    if (name === undefined) app.logger.error(`docs/api: entry point ${file ?? reflection.name} is not an export of its package.json`);
    else reflection.name = name;
  });
}
