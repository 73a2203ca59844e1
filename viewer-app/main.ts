// pairbench view: the browser side. Every value shown comes from the server as JSON and is
// rendered as text by preact (htm builds elements, never HTML strings): agent output is hostile.
import htm from 'htm';
import { h, render, type VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { shortDuration } from '../pipeline/progress.js';
import { totalTokens, type AttemptRow, type AttemptView, type CohortView, type TaskRow, type ViewerState } from '../viewer/view-types.js';

// htm gives an array for several top-level elements; preact renders either as a child.
const html = htm.bind(h) as (strings: TemplateStringsArray, ...values: unknown[]) => VNode;

async function getJson<T>(path: string): Promise<T> {
  const r = await fetch(path);
  if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

/** The page the hash names: #/c/ID, #/c/ID/task/TASK, #/c/ID/attempt/NODE, each with ?filters. */
function parseHash(hash: string): { parts: string[]; query: URLSearchParams } {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query) };
}
const link = (...parts: string[]) => '#/' + parts.map(encodeURIComponent).join('/');

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

/** Polls the state: the cohorts, and while a run is going, its progress. */
function usePolledState(): ViewerState | null {
  const [state, setState] = useState<ViewerState | null>(null);
  useEffect(() => {
    let stop = false;
    const tick = async () => {
      try {
        const s = await getJson<ViewerState>('/api/state');
        if (!stop) setState(s);
      } catch {
        // the server went away: keep what is shown
      }
      if (!stop) setTimeout(tick, 2000);
    };
    void tick();
    return () => {
      stop = true;
    };
  }, []);
  return state;
}

function useJson<T>(path: string, version: string): T | null | Error {
  const [value, setValue] = useState<T | null | Error>(null);
  useEffect(() => {
    let live = true;
    getJson<T>(path).then(
      (v) => live && setValue(v),
      (e: Error) => live && setValue(e),
    );
    return () => {
      live = false;
    };
  }, [path, version]);
  return value;
}

const fmtTokens = (n: number | null) => (n === null ? '—' : n.toLocaleString('en'));
const fmtUsd = (n: number | null) => (n === null ? '—' : `$${n.toFixed(4)}`);
const fmtSeconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const outcomeOf = (a: Pick<AttemptRow, 'admission' | 'pass'>) => (a.admission !== 'accepted' ? 'excluded' : a.pass ? 'pass' : 'fail');

function ProgressView({ progress }: { progress: NonNullable<ViewerState['progress']> }): VNode {
  const done = progress.cached;
  return html`<section class="card" data-testid="progress">
    <h2>Run in progress: ${done} of ${progress.total} nodes built</h2>
    <div class="progress"><div style=${{ width: `${(100 * done) / Math.max(1, progress.total)}%` }}></div></div>
    <p data-testid="progress-split">${`${progress.running.length} running, ${progress.queued} queued (as of ${progress.at}).`}</p>
    ${
      progress.running.length
        ? html`<ul data-testid="running">
            ${progress.running.map((r) => html`<li key=${r.id}>${`running ${shortDuration(r.elapsed_ms)} · ${r.id}`}</li>`)}
          </ul>`
        : null
    }
    <ul data-testid="steps">
      ${progress.steps.map(
        (st) =>
          html`<li key=${st.name}>
            ${`${st.name}: ${st.built} of ${st.total} built${st.eta_ms !== null ? `, about ${shortDuration(st.eta_ms)} left` : ', no estimate until one is built'}`}
          </li>`,
      )}
    </ul>
    <details>
      <summary>nodes</summary>
      <ul>
        ${progress.nodes.map((n) => html`<li key=${n.id}>${n.status === 'cached' ? 'built' : n.status === 'running' ? 'running' : 'queued'} · ${n.id}</li>`)}
      </ul>
    </details>
  </section>`;
}

function Home({ state }: { state: ViewerState }): VNode {
  return html`<main>
    ${state.progress && state.progress.to_run > 0 ? html`<${ProgressView} progress=${state.progress} />` : null}
    <h1>Cohorts</h1>
    ${state.cohorts.length === 0 ? html`<p>No cohort has been exported yet${state.progress ? ': the run has not reached its export step' : ''}.</p>` : null}
    <ul>
      ${state.cohorts.map((c) => html`<li key=${c.id}><a href=${link('c', c.id)}>${c.cohort}</a>${c.version !== null ? ` (version ${c.version})` : ''}</li>`)}
    </ul>
  </main>`;
}

// Whole sentences built here: htm drops the whitespace around a line break in a template.
const verdictLine = (v: CohortView['verdicts'][number]) => `${v.effect} 95% CI ${v.interval} · n = ${v.n_tasks} tasks${v.p ? ` · p (Holm) ${v.p}` : ''}`;
const outcomesText = (t: TaskRow) =>
  Object.entries(t.outcomes)
    .map(([k, v]) => `${k}: ${v}`)
    .join('; ');
const taskLine = (t: TaskRow) => `family ${t.family} · category ${t.category} · ${outcomesText(t) || 'no outcome class'}`;

/** Each filter and the values a task has for it (an arm or admission: any of its attempts'). */
const FILTERS = {
  task: (t: TaskRow) => [t.task],
  family: (t: TaskRow) => [t.family],
  category: (t: TaskRow) => [t.category],
  arm: (t: TaskRow) => t.attempts.map((a) => a.arm),
  outcome: (t: TaskRow) => Object.values(t.outcomes),
  admission: (t: TaskRow) => t.attempts.map((a) => a.admission),
};
type Filter = keyof typeof FILTERS;
const FILTER_NAMES = Object.keys(FILTERS) as Filter[];

function CohortPage({ id, cohort, query }: { id: string; cohort: CohortView; query: URLSearchParams }): VNode {
  const values = (f: Filter): string[] => [...new Set(cohort.tasks.flatMap(FILTERS[f]))].sort();
  const chosen = (f: string) => query.get(f) ?? '';
  const setFilter = (f: string, v: string) => {
    const q = new URLSearchParams(query);
    if (v) q.set(f, v);
    else q.delete(f);
    location.hash = `${link('c', id)}${q.toString() ? `?${q.toString()}` : ''}`;
  };
  const rows = cohort.tasks.filter((t) => FILTER_NAMES.every((f) => !chosen(f) || FILTERS[f](t).includes(chosen(f))));
  const s = cohort.status;
  return html`<main>
    <h1>${cohort.cohort}${cohort.version !== null ? ` · version ${cohort.version}` : ''}</h1>
    ${
      s
        ? html`<div class="statusbar" data-testid="status-bar">
            <span>agent <b>${s['agent']}</b></span
            ><span>model <b>${s['model']}</b></span
            ><span>sandbox <b>${s['sandbox']}</b> (${s['isolation']})</span> <span>image <b>${s['image'] ?? 'none'}</b></span
            ><span>egress <b>${s['egress']}</b></span
            ><span>design <b>${s['design']}</b></span>
          </div>`
        : null
    }
    ${cohort.warnings.map((w) => html`<div class="card warning">${w}</div>`)}
    <h2>Verdicts</h2>
    ${cohort.verdicts.map(
      (v) =>
        html`<div class="card" data-testid="verdict">
          <h3><a href=${link('c', id) + `?arm=${encodeURIComponent(v.treatment)}`}>${v.title}</a></h3>
          <p><span class=${`verdict ${v.verdict}`}>${v.verdict}</span> ${verdictLine(v)}</p>
          <p>${v.meaning}</p>
        </div>`,
    )}
    <h2>Tasks</h2>
    <div class="filters">
      ${FILTER_NAMES.map(
        (f) =>
          html`<label
            >${f}
            <select data-filter=${f} value=${chosen(f)} onChange=${(e: Event) => setFilter(f, (e.target as HTMLSelectElement).value)}>
              <option value="">all</option>
              ${values(f).map((v) => html`<option value=${v}>${v}</option>`)}
            </select></label
          >`,
      )}
    </div>
    <!-- The outcome first: on a phone what was decided is on screen; the rest scrolls, with a shadow. -->
    <div class="scroll">
      <table data-testid="tasks">
        <thead>
          <tr>
            <th>task</th>
            <th>outcome (a/b/c)</th>
            <th>attempts (arm: pass/fail/excluded)</th>
            <th>family</th>
            <th>category</th>
          </tr>
        </thead>
        <tbody>
          ${rows.map(
            (t) =>
              html`<tr key=${t.task}>
                <td><a href=${link('c', id, 'task', t.task)}>${t.task}</a></td>
                <td>${outcomesText(t) || '—'}</td>
                <td>
                  ${t.attempts
                    .filter((a) => (!chosen('arm') || a.arm === chosen('arm')) && (!chosen('admission') || a.admission === chosen('admission')))
                    .map((a) => `${a.arm}#${a.rep} ${outcomeOf(a)}`)
                    .join(', ')}
                </td>
                <td>${t.family}</td>
                <td>${t.category}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
    <h2>How it was frozen</h2>
    <dl>
      <dt>freeze digest</dt>
      <dd>${cohort.freeze_digest ?? 'not registered'}</dd>
      <dt>config digest</dt>
      <dd>${cohort.config_digest}</dd>
    </dl>
    ${
      cohort.history
        ? html`<h3>Version history (registry)</h3>
            <pre data-testid="history">${cohort.history.join('\n')}</pre>`
        : null
    }
    ${
      cohort.freeze
        ? html`<details>
            <summary>freeze record of this version</summary>
            <pre>${JSON.stringify(cohort.freeze, null, 2)}</pre>
          </details>`
        : null
    }
    ${
      cohort.has_report
        ? html`<h2>Report</h2>
            <p>
              The exported report: every sentence, chart and the methods panel. <a href=${`/report/${encodeURIComponent(id)}`} target="_blank">open alone</a>
            </p>
            <iframe title="report" sandbox="" src=${`/report/${encodeURIComponent(id)}`}></iframe>`
        : null
    }
  </main>`;
}

function AttemptCard({ id, node }: { id: string; node: string }): VNode {
  const a = useJson<AttemptView>(`/api/cohorts/${encodeURIComponent(id)}/attempts/${encodeURIComponent(node)}`, node);
  if (!a) return html`<div class="card">loading ${node}…</div>`;
  if (a instanceof Error) return html`<div class="card warning">${a.message}</div>`;
  const r = a.record;
  const tokens = totalTokens(r.usage);
  return html`<div class="card" data-testid="attempt" data-node=${node}>
    <h3>${r.arm} · rep ${r.rep} · <a href=${link('c', id, 'attempt', node)}>trajectory</a></h3>
    <dl>
      <dt>outcome</dt>
      <dd>${outcomeOf(r)}</dd>
      <dt>exit</dt>
      <dd>${r.exit_reason}</dd>
      <dt>admission</dt>
      <dd>${r.admission} (${r.reason_code})</dd>
      <dt>why</dt>
      <dd>${r.explanation}</dd>
      <dt>tokens</dt>
      <dd>${fmtTokens(tokens)}</dd>
      <dt>cost</dt>
      <dd>${fmtUsd(r.cost_usd)}</dd>
      <dt>wall</dt>
      <dd>${fmtSeconds(r.wall_ms)}</dd>
    </dl>
    <h3>Diff</h3>
    <pre data-testid="diff">${a.diff ?? '(no diff recorded)'}</pre>
    <h3>Verifier output</h3>
    <pre data-testid="verifier">${a.verifier ?? '(no verifier output)'}</pre>
    ${
      r.delivery && r.delivery.marker_lines.length
        ? html`<h3>Delivery evidence</h3>
            ${
              a.delivered_at.length
                ? html`<p>The treatment's marker reached the model in:</p>
                    <ul data-testid="delivery">
                      ${a.delivered_at.map((d) => html`<li><a href=${link('c', id, 'attempt', node)}>gateway exchange ${d.exchange}</a>: <code>${d.line}</code></li>`)}
                    </ul>`
                : html`<p data-testid="delivery">The treatment's marker was not found in any request the model received.</p>`
            }`
        : null
    }
  </div>`;
}

function PairPage({ id, task, cohort }: { id: string; task: string; cohort: CohortView }): VNode {
  const row = cohort.tasks.find((t) => t.task === task);
  if (!row) return html`<main><p>No task ${task} in this cohort.</p></main>`;
  const reps = [...new Set(row.attempts.map((a) => a.rep))].sort((x, y) => x - y);
  return html`<main>
    <p><a href=${link('c', id)}>← ${cohort.cohort}</a></p>
    <h1>${task}</h1>
    <p>${taskLine(row)}</p>
    ${reps.map(
      (rep) =>
        html`<h2>rep ${rep}</h2>
          <div class="pair">${row.attempts.filter((a) => a.rep === rep).map((a) => html`<${AttemptCard} key=${a.node} id=${id} node=${a.node} />`)}</div>`,
    )}
  </main>`;
}

function TrajectoryPage({ id, node }: { id: string; node: string }): VNode {
  const a = useJson<AttemptView>(`/api/cohorts/${encodeURIComponent(id)}/attempts/${encodeURIComponent(node)}`, node);
  if (!a) return html`<main>loading…</main>`;
  if (a instanceof Error) return html`<main class="card warning">${a.message}</main>`;
  const findings = [...(a.record.leakage ?? []).map((l) => l.evidence), ...(a.record.mutation?.out_of_bounds ?? [])].filter((e) => e.length > 0);
  const flagged = (text: string) => findings.some((f) => text.includes(f));
  const steps = a.trajectory?.steps ?? [];
  return html`<main>
    <p><a href=${link('c', id, 'task', a.record.task)}>← ${a.record.task}</a></p>
    <h1>${node}</h1>
    ${(a.record.leakage ?? []).map((l) => html`<div class="card warning" data-testid="finding">leakage (${l.kind}) at ${l.where}: ${l.evidence}</div>`)}
    ${(a.record.mutation?.out_of_bounds ?? []).map((p) => html`<div class="card warning" data-testid="finding">wrote out of bounds: ${p}</div>`)}
    <h2>Trajectory (${steps.length} steps)</h2>
    ${steps.map((s) => {
      const text = JSON.stringify(s);
      return html`<div class=${`card step ${s.source}${flagged(text) ? ' finding' : ''}`} data-testid="step">
        <b>${s.step_id} · ${s.source}</b>
        ${s.message ? html`<pre>${s.message}</pre>` : null}
        ${(s.tool_calls ?? []).map(
          (c) =>
            html`<div>
              tool call <b>${c.function_name}</b>
              <pre>${JSON.stringify(c.arguments, null, 2)}</pre>
            </div>`,
        )}
        ${(s.observation?.results ?? []).map(
          (o) =>
            html`<div>
              observation
              <pre data-testid="observation">${o.content ?? ''}</pre>
            </div>`,
        )}
      </div>`;
    })}
    <h2>Gateway exchanges (${a.gateway.length}; credentials redacted)</h2>
    ${a.gateway.map((g, i) => {
      const text = typeof g === 'string' ? g : JSON.stringify(g, null, 2);
      return html`<details class=${flagged(text) ? 'finding' : ''}>
        <summary>exchange ${i + 1}</summary>
        <pre>${text}</pre>
      </details>`;
    })}
    ${
      a.agent_log
        ? html`<h2>Agent log</h2>
            <pre>${a.agent_log}</pre>`
        : null
    }
  </main>`;
}

function CohortRoute({ id, rest, query, version }: { id: string; rest: string[]; query: URLSearchParams; version: string }): VNode {
  const cohort = useJson<CohortView>(`/api/cohorts/${encodeURIComponent(id)}`, version);
  if (!cohort) return html`<main>loading…</main>`;
  if (cohort instanceof Error) return html`<main class="card warning">${cohort.message}</main>`;
  if (rest[0] === 'task' && rest[1]) return html`<${PairPage} id=${id} task=${rest[1]} cohort=${cohort} />`;
  if (rest[0] === 'attempt' && rest[1]) return html`<${TrajectoryPage} id=${id} node=${rest[1]} />`;
  return html`<${CohortPage} id=${id} cohort=${cohort} query=${query} />`;
}

function App(): VNode {
  const hash = useHash();
  const state = usePolledState();
  const { parts, query } = parseHash(hash);
  // A cohort page reloads when the set of cohorts changes (a live run exported a new bundle).
  const version = state ? state.cohorts.map((c) => c.id).join(',') : '';
  let page: VNode;
  if (!state) page = html`<main>loading…</main>`;
  else if (parts[0] === 'c' && parts[1]) page = html`<${CohortRoute} id=${parts[1]} rest=${parts.slice(2)} query=${query} version=${version} />`;
  else page = html`<${Home} state=${state} />`;
  return html`<div>
    <header>
      <a href="#/"><b>pairbench view</b></a
      ><span>read-only</span>
    </header>
    ${page}
  </div>`;
}

render(html`<${App} />`, document.getElementById('app')!);
