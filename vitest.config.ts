import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // TMPDIR on a RAM-backed file system when there is one with room (test/ram-tmpdir.ts), set
    // first; then a directory for the stores several test files share (test/golden-store.ts), per run.
    globalSetup: ['test/ram-tmpdir.ts', 'test/golden-setup.ts'],
    // A test fails when it is wrong, not when the machine is slow: its only time bound is the
    // suite's own budget (15 minutes), far above ten times any test's quiet duration. Tests
    // wait on events (a file, a line, a record), never on a fixed time.
    testTimeout: 900_000,
    hookTimeout: 900_000,
    pool: 'forks',
    // Most tests wait on child processes (git, bubblewrap, dockerd, the agent CLI): with two
    // files at once a 2-core machine was 17% idle (vmstat, a clean-clone .ci/run: 909.6 s);
    // with three, 6% idle and 842.6 s, every test passing. The default (cores - 1) runs them one by one.
    maxWorkers: 3,
  },
});
