// Judge the official MCP conformance suite's results against our expected-failures file.
//
// usage: node evaluate.mjs RESULTS_DIR EXPECTED_FAILURES_YML YAML_MODULE_DIR RUN...
//   RUN = "<spec-version>/<scenario>"; its results are RESULTS_DIR/<spec-version>/<scenario>/**/checks.json
//   YAML_MODULE_DIR = a node_modules folder holding the `yaml` package (the suite's own dependency)
//
// Rules (exit 1 when any is broken):
//   - every run produced a checks.json;
//   - a FAILURE check not listed in the file fails the run (unexpected failure);
//   - a listed entry whose check (or, for a whole-scenario entry, whose scenario) no longer
//     fails, fails the run (stale entry);
//   - every entry names a scenario that was run and carries a non-empty `reason`.
// WARNING and SKIPPED checks are reported but do not fail the run (the suite's own exit code
// ignores them too).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const [resultsDir, expectedFile, yamlDir, ...runs] = process.argv.slice(2);
const YAML = createRequire(join(yamlDir, 'noop.js'))('yaml');

function findChecks(dir) {
  const found = [];
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return found;
  }
  for (const name of entries) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) found.push(...findChecks(p));
    else if (name === 'checks.json') found.push(p);
  }
  return found;
}

const problems = [];
const doc = YAML.parse(readFileSync(expectedFile, 'utf8')) ?? {};
const entries = doc.expected_failures ?? [];
if (!Array.isArray(entries)) problems.push(`${expectedFile}: expected_failures must be a list`);
const expected = [];
for (const e of Array.isArray(entries) ? entries : []) {
  if (!e || typeof e.check !== 'string' || !e.check) {
    problems.push(`${expectedFile}: entry ${JSON.stringify(e)} has no 'check'`);
    continue;
  }
  if (typeof e.reason !== 'string' || !e.reason.trim()) {
    problems.push(`${expectedFile}: entry '${e.check}' has no 'reason'`);
  }
  const i = e.check.indexOf(':');
  expected.push(i < 0 ? { check: e.check, scenario: e.check, id: null } : { check: e.check, scenario: e.check.slice(0, i), id: e.check.slice(i + 1) });
}

const scenariosRun = new Map(); // scenario -> spec version
const rows = [];
const unexpected = [];
const warnings = [];
const skips = [];
const matched = new Set();
for (const run of runs) {
  const [version, scenario] = run.split('/');
  scenariosRun.set(scenario, version);
  const files = findChecks(join(resultsDir, version, scenario));
  if (files.length !== 1) {
    problems.push(`${run}: expected one checks.json, found ${files.length} (the suite did not run the scenario?)`);
    rows.push({ run, passed: 0, failed: 0, expectedFailed: 0, warnings: 0, skipped: 0, verdict: 'NO RESULTS' });
    continue;
  }
  const checks = JSON.parse(readFileSync(files[0], 'utf8'));
  const whole = expected.find((e) => e.scenario === scenario && e.id === null);
  let passed = 0, failed = 0, expectedFailed = 0, warned = 0, skipped = 0;
  const statusById = new Map();
  for (const c of checks) {
    const prev = statusById.get(c.id);
    if (prev !== 'FAILURE') statusById.set(c.id, c.status);
    if (c.status === 'SUCCESS') passed++;
    else if (c.status === 'SKIPPED') {
      skipped++;
      skips.push(`${scenario}:${c.id} — ${c.errorMessage ?? (c.details ? JSON.stringify(c.details) : c.description ?? '')}`);
    }
    else if (c.status === 'WARNING') {
      warned++;
      warnings.push(`${scenario}:${c.id} — ${c.errorMessage ?? c.description ?? ''}`);
    } else if (c.status === 'FAILURE') {
      const entry = whole ?? expected.find((e) => e.scenario === scenario && e.id === c.id);
      if (entry) {
        expectedFailed++;
        matched.add(entry.check);
      } else {
        failed++;
        unexpected.push(`${scenario}:${c.id} [${version}] — ${c.errorMessage ?? c.description ?? '(no message)'}`);
      }
    }
  }
  for (const e of expected.filter((e) => e.scenario === scenario && e.id !== null)) {
    if (statusById.get(e.id) === 'FAILURE') continue;
    problems.push(`stale entry '${e.check}': the check is now ${statusById.get(e.id) ?? 'not reported'} — remove it from ${expectedFile}`);
  }
  if (whole && !checks.some((c) => c.status === 'FAILURE')) {
    problems.push(`stale entry '${whole.check}': the scenario has no failing check now — remove it from ${expectedFile}`);
  }
  const verdict = failed > 0 ? 'FAIL' : expectedFailed > 0 ? 'PASS (expected failures)' : 'PASS';
  rows.push({ run, passed, failed, expectedFailed, warnings: warned, skipped, verdict });
}
for (const e of expected) {
  if (!scenariosRun.has(e.scenario)) problems.push(`entry '${e.check}' names a scenario that this run does not execute`);
}

const w = Math.max(...rows.map((r) => r.run.length), 8);
console.log(`\n${'scenario'.padEnd(w)}  passed  failed  expected  warnings  skipped  verdict`);
for (const r of rows) {
  console.log(`${r.run.padEnd(w)}  ${String(r.passed).padStart(6)}  ${String(r.failed).padStart(6)}  ${String(r.expectedFailed).padStart(8)}  ${String(r.warnings).padStart(8)}  ${String(r.skipped).padStart(7)}  ${r.verdict}`);
}
if (skips.length) {
  console.log('\nSkipped by the suite (not applicable to this server):');
  for (const x of skips) console.log(`  - ${x}`);
}
if (warnings.length) {
  console.log('\nWarnings (reported, not failing):');
  for (const x of warnings) console.log(`  ! ${x}`);
}
if (unexpected.length) {
  console.log('\nUnexpected failures (not in the expected-failures file):');
  for (const x of unexpected) console.log(`  ✗ ${x}`);
}
if (problems.length) {
  console.log('\nProblems:');
  for (const x of problems) console.log(`  ✗ ${x}`);
}
const bad = unexpected.length + problems.length;
console.log(bad ? `\nconformance: FAILED (${unexpected.length} unexpected failures, ${problems.length} other problems)` : '\nconformance: OK');
process.exit(bad ? 1 : 0);
