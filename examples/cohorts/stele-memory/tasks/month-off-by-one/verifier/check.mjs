// Calendar months count from 01, in UTC.
const { formatDate } = await import(`${process.cwd()}/src/date.mjs`);
const cases = [
  [Date.UTC(2026, 0, 15), '2026-01-15'],
  [Date.UTC(2025, 11, 31, 23, 30), '2025-12-31'],
  [Date.UTC(2024, 1, 29), '2024-02-29'],
];
for (const [at, want] of cases) {
  const got = formatDate(new Date(at));
  if (got !== want) {
    console.error(`formatDate(${new Date(at).toISOString()}) = ${got}, expected ${want}`);
    process.exit(1);
  }
}
console.log('dates ok');
