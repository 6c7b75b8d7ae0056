#!/usr/bin/env node
// bmoe-bench: matrix, analyze, calibrate, targets, serve-load (also reachable as `bmoe bench`).
import { main } from './main.js';

process.exitCode = await main(process.argv);
