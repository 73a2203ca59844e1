import { SaxesParser } from 'saxes';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import type { RunnerStatus } from './status.js';

/**
 * JUnit XML (pytest --junitxml, node --test's junit reporter, jest-junit, mocha-junit-reporter),
 * read with a real XML parser: only elements count, so no text a test prints -- inside CDATA,
 * <system-out>, an attribute -- can open or close a <testcase> or add a <failure>. One status
 * per <testcase>: <failure> fails it, <error> errors it, <skipped> skips it (pytest's xfail is
 * XFAIL), else it passed. Its id is `file::name` when the case names its file, else
 * `classname::name`; a pytest case is also found by its node id (see caseIds). An XML that does
 * not parse is no report at all (an error, never a pass).
 */
export function parseJunitXml(xml: string): Result<Map<string, RunnerStatus>, string> {
  const out = new Map<string, RunnerStatus>();
  const parser = new SaxesParser({ xmlns: false });
  let current: { ids: string[]; status: RunnerStatus } | null = null;
  let depth = 0;
  let caseDepth = -1;
  let problem: string | null = null;
  parser.on('error', (e) => {
    problem ??= errorMessage(e);
  });
  parser.on('opentag', (tag) => {
    depth++;
    const attr = (name: string): string | undefined => {
      const a: unknown = tag.attributes[name];
      return typeof a === 'string' ? a : a && typeof a === 'object' && 'value' in a ? String((a as { value: unknown }).value) : undefined;
    };
    if (tag.name === 'testcase' && current === null) {
      const name = attr('name');
      current = { ids: name === undefined ? [] : caseIds(name, attr('classname'), attr('file')), status: 'PASSED' };
      caseDepth = depth;
      return;
    }
    // A result element directly inside the case (not one nested in, say, a <properties> block).
    if (current && depth === caseDepth + 1) {
      if (tag.name === 'failure' && current.status !== 'ERROR') current.status = 'FAILED';
      else if (tag.name === 'error') current.status = 'ERROR';
      else if (tag.name === 'skipped' && current.status === 'PASSED') current.status = attr('type') === 'pytest.xfail' ? 'XFAIL' : 'SKIPPED';
    }
  });
  parser.on('closetag', (tag) => {
    if (current && tag.name === 'testcase' && depth === caseDepth) {
      for (const id of current.ids) out.set(id, current.status);
      current = null;
      caseDepth = -1;
    }
    depth--;
  });
  try {
    parser.write(xml).close();
  } catch (e) {
    problem ??= errorMessage(e);
  }
  return problem ? err(`the JUnit XML report does not parse: ${problem}`) : ok(out);
}

/**
 * The ids a case is found by: `file::name` (or `classname::name`), and for pytest's cases their
 * node id: with the file (junit_family xunit1) the class parts of the classname after the module
 * (`tests/test_x.py::TestA::test_b`); without it, each way the dotted classname splits into a
 * module path and classes (`tests/test_x.py::test_b` for classname tests.test_x).
 */
function caseIds(name: string, classname: string | undefined, file: string | undefined): string[] {
  const ids = [`${file ?? classname ?? ''}::${name}`.replace(/^::/, '')];
  if (!classname || /\s/.test(classname)) return ids;
  const parts = classname.split('.');
  if (file?.endsWith('.py')) {
    const module = file.slice(0, -3).replaceAll('/', '.');
    if (classname.startsWith(`${module}.`)) ids.push(`${file}::${classname.slice(module.length + 1).replaceAll('.', '::')}::${name}`);
    return ids;
  }
  if (file) return ids;
  for (let i = parts.length; i >= 1; i--) ids.push([`${parts.slice(0, i).join('/')}.py`, ...parts.slice(i), name].join('::'));
  return ids;
}
