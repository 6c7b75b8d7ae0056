// Reading the rest of a refused request body before answering. fastify refuses a body over the
// limit from its Content-Length alone and closes the connection; a client still uploading then
// gets a reset instead of the 413 (seen by the soak's oversized requests on a loaded machine).
// Reading and discarding what follows, within bounds, lets it read the answer.
import type { IncomingMessage } from 'node:http';

/** Reads and discards `req`'s remaining body: until its end, `maxBytes`, or `ms`, whichever comes first. */
export function drainBody(req: IncomingMessage, maxBytes: number, ms: number): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', finish);
      req.off('close', finish);
      req.off('error', finish);
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      seen += chunk.length;
      if (seen > maxBytes) finish();
    };
    const timer = setTimeout(finish, ms);
    req.on('data', onData);
    req.once('end', finish);
    req.once('close', finish);
    req.once('error', finish);
    req.resume();
  });
}
