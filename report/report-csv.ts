/**
 * One CSV row per attempt, accepted or excluded, as RFC 4180 says: CRLF line
 * ends, a header, and a field quoted (quotes doubled) when it holds a comma, a
 * quote or a line break. Values are written as recorded, never rewritten; null is
 * an empty field. Rows are sorted (task, arm, rep, node) so the bytes do not
 * depend on the order the attempts were read in.
 */
import type { AttemptRecord } from '../stats/types.js';

type Cell = string | number | boolean | null;

const COLUMNS: Array<[string, (a: AttemptRecord) => Cell]> = [
  ['node', (a) => a.node],
  ['task', (a) => a.task],
  ['family', (a) => a.family],
  ['category', (a) => a.category],
  ['arm', (a) => a.arm],
  ['rep', (a) => a.rep],
  ['admission', (a) => a.admission],
  ['reason_code', (a) => a.reason_code],
  ['explanation', (a) => a.explanation],
  ['pass', (a) => a.pass],
  ['no_answer', (a) => a.no_answer],
  ['exit_reason', (a) => a.exit_reason],
  ['infra_error', (a) => a.infra_error],
  ['input_tokens', (a) => a.usage?.input_tokens ?? null],
  ['output_tokens', (a) => a.usage?.output_tokens ?? null],
  ['cache_write_tokens', (a) => a.usage?.cache_write_tokens ?? null],
  ['cache_read_tokens', (a) => a.usage?.cache_read_tokens ?? null],
  ['cost_usd', (a) => a.cost_usd],
  ['cost_confidence', (a) => a.cost_confidence],
  ['wall_ms', (a) => a.wall_ms],
  ['harness_ms', (a) => a.harness_ms ?? null],
  ['turns', (a) => a.turns],
  ['tool_calls', (a) => a.tool_calls],
  ['agent_adapter', (a) => a.agent.adapter],
  ['agent_version', (a) => a.agent.version],
  ['model', (a) => a.agent.model],
  ['provider', (a) => a.agent.provider],
  ['sandbox_backend', (a) => a.sandbox.backend],
  ['isolation', (a) => a.sandbox.isolation],
  ['out_of_bounds_paths', (a) => a.integrity?.out_of_bounds ?? null],
  ['leakage_flags', (a) => a.integrity?.leakage ?? null],
  ['verdict_forged', (a) => a.integrity?.verdict_forged ?? null],
  ['egress_mode', (a) => a.sandbox.egress_mode],
  ['egress_enforced', (a) => a.sandbox.egress_enforced],
  ['image_id', (a) => a.sandbox.image_id],
  ['cpus', (a) => a.sandbox.resources.cpus],
  ['memory_mb', (a) => a.sandbox.resources.memory_mb],
  ['pids', (a) => a.sandbox.resources.pids],
  ['delivered', (a) => a.mechanism.delivered],
  ['used', (a) => a.mechanism.used],
  ['started_at', (a) => a.started_at],
  ['ended_at', (a) => a.ended_at],
];

export const CSV_COLUMNS: readonly string[] = COLUMNS.map(([name]) => name);

export function renderCsv(attempts: AttemptRecord[]): string {
  const rows = [...attempts].sort((x, y) => cmp(x.task, y.task) || cmp(x.arm, y.arm) || x.rep - y.rep || cmp(x.node, y.node));
  const lines = [CSV_COLUMNS.map(field).join(',')];
  for (const a of rows) lines.push(COLUMNS.map(([, get]) => field(get(a))).join(','));
  return lines.join('\r\n') + '\r\n';
}

function field(v: Cell): string {
  if (v === null) return '';
  const s = typeof v === 'string' ? v : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
