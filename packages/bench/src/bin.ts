#!/usr/bin/env node
// bmoe-bench: matrix, analyze, calibrate, targets, waiting, serve-load, serve, soak (also reachable as `bmoe bench`).
import { main } from './main.js';

process.exitCode = await main(process.argv);
