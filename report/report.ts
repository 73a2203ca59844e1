/**
 * The human-readable exports of a cohort: Markdown (CI job summary), CSV (one row
 * per attempt) and a self-contained HTML page. Each is a pure function of the
 * analysis result, the attempts and the report context: same inputs, same bytes.
 */
export { renderMarkdown } from './report-markdown.js';
export { renderCsv, CSV_COLUMNS } from './report-csv.js';
export { renderHtml } from './report-html.js';
export type { ReportContext, ReportTask } from './report-context.js';
