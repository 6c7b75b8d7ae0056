// `@bmoe/engine/metrics`: the one metrics schema. Imports nothing native, so the bench and the
// server can read and write metrics without loading the C++ addon. Each module of this folder is
// public as a whole: what it exports is the schema's (no second list of names to keep in step).
export * from './columns.js';
export * from './csv.js';
export * from './summary.js';
export * from './lines.js';
export * from './prometheus.js';
export * from './bench.js';
export { BmoeError } from '../errors.js';
