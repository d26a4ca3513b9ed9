/**
 * Loaded with `node --import` before a command a test runs: at exit, writes the process's peak
 * resident memory (KiB, as the kernel counts it) to $SIMREC_PEAK_RSS_FILE.
 */
import { writeFileSync } from 'node:fs';

process.on('exit', () => {
  const file = process.env.SIMREC_PEAK_RSS_FILE;
  if (file) writeFileSync(file, String(process.resourceUsage().maxRSS));
});
