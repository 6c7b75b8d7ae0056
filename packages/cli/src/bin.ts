#!/usr/bin/env node
// The `bmoe` executable. Exit codes come from main(); a closed stdout (`bmoe run ... | head`)
// ends the run quietly instead of crashing with EPIPE.
import { main } from './index.js';

process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

process.exitCode = await main(process.argv.slice(2));
