// Preloaded into the measured process: prints its peak RSS when it exits.
process.on('exit', () => {
  process.stderr.write(`\n@@maxrss_kb=${process.resourceUsage().maxRSS}\n`);
});
