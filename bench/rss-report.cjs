// Preloaded into the measured process: prints its peak RSS, and the CPU it spent itself (every
// thread, not its children), when it exits.
process.on('exit', () => {
  const cpu = process.cpuUsage();
  process.stderr.write(`\n@@maxrss_kb=${process.resourceUsage().maxRSS}\n@@own_cpu_ms=${(cpu.user + cpu.system) / 1000}\n`);
});
