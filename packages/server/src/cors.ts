// Opt-in CORS (`cors` option, `bmoe serve --cors ORIGIN`): @fastify/cors, told to answer only the
// given origins. A listed origin's requests get Access-Control-Allow-Origin (its own origin, with
// Vary: Origin) and its preflight (OPTIONS with Access-Control-Request-Method) a 204 allowing GET,
// HEAD and POST with the headers it asks for; any other origin gets no CORS header and its
// preflight a 404, so the browser keeps its page out. Without the option nothing is registered.
import fastifyCors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/** Registers CORS for `origins` (normalized; '*' = any origin); does nothing for an empty list. */
export function registerCors(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const any = origins.includes('*');
  const allowed = new Set(origins);
  const options: FastifyCorsOptions = {
    // A function (not the list itself): a refused origin then gets no preflight answer either.
    origin: (origin, cb) => cb(null, origin !== undefined && (any || allowed.has(origin))),
    methods: ['GET', 'HEAD', 'POST'],
  };
  void app.register(fastifyCors, options);
}
