// The operator approval flow across three separate processes, as a person
// would run it from a shell:
//   1. the MCP inspector CLI calls declare_need for a fetch the policy marks
//      require_approval and exits with a pending declaration_id;
//   2. `airlock approvals approve ID --state DIR` approves it;
//   3. a second, fresh inspector CLI run calls declare_need with
//      declaration_id=ID and gets the fenced content.
// Each inspector run is its own MCP session, so the declaration must belong
// to the principal (its runtime context), not to the MCP session that made it.
// (Over stdio every process is a fresh `airlock serve` on the same state
// directory, so this also shows declarations outlive a restart.)
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { AIRLOCK, E2E, NODE22, INSPECTOR, requireBuilt, tempState, removeState, startHTTP, startOrigin, randomToken, run, auditVerify, auditRecords } from '../lib/airlock.mjs';

const CONFIG = path.join(E2E, 'declare.yaml');
const JUSTIFICATION = { user_request: 'What is the outlook?', missing_knowledge: 'The published outlook.', expected_use: 'Quote it.' };

function parseJSON(res) {
  try {
    return JSON.parse(res.stdout);
  } catch (err) {
    throw new Error(`inspector output is not JSON (exit ${res.code}): ${err.message}\n--- stdout ---\n${res.stdout}\n--- stderr ---\n${res.stderr}`);
  }
}

const declareArgs = (url) => ['--method', 'tools/call', '--tool-name', 'declare_need',
  '--tool-arg', 'operation=comm.fetch',
  '--tool-arg', `parameters=${JSON.stringify({ url })}`,
  '--tool-arg', `justification=${JSON.stringify(JUSTIFICATION)}`];
const collectArgs = (id) => ['--method', 'tools/call', '--tool-name', 'declare_need', '--tool-arg', `declaration_id=${id}`];
const textOfOut = (out) => (out.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

/**
 * The three steps against one state directory; `inspect(args)` runs one
 * inspector CLI process (a new MCP session each time).
 */
function approvalFlow(name, setup) {
  describe(name, () => {
    let ctx;
    let origin;
    let declarationId;

    before(async () => {
      requireBuilt();
      origin = await startOrigin(() => 'Quarterly outlook: steady.\n');
      ctx = await setup();
    });

    after(async () => {
      await ctx?.stop?.();
      origin?.close();
      await removeState(ctx?.state);
    });

    it('process 1: the inspector declares a fetch that needs a person; nothing is fetched', async () => {
      const res = await ctx.inspect(declareArgs(`${origin.base}/outlook`));
      assert.equal(res.code, 0, `inspector exited ${res.code}:\n${res.stdout}\n${res.stderr}`);
      const out = parseJSON(res);
      assert.notEqual(out.isError, true, res.stdout);
      assert.match(textOfOut(out), /airlock approvals approve/);
      declarationId = out.structuredContent?.declaration_id;
      assert.ok(declarationId, `no declaration_id in ${res.stdout}`);
      assert.equal(out.structuredContent.state, 'declared');
      assert.equal(origin.hits, 0);
    });

    it('process 2: `airlock approvals approve ID --state DIR`', async () => {
      assert.ok(declarationId, 'process 1 produced no declaration');
      const list = await run(AIRLOCK, ['approvals', 'list', '--state', ctx.state]);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, new RegExp(declarationId));
      const ok = await run(AIRLOCK, ['approvals', 'approve', declarationId, '--state', ctx.state, '--reason', 'e2e operator (three processes)']);
      assert.equal(ok.code, 0, ok.stdout + ok.stderr);
      assert.match(ok.stdout, /approved/);
    });

    it('process 3: a second inspector run collects the fenced content with declaration_id', async () => {
      assert.ok(declarationId, 'process 1 produced no declaration');
      const res = await ctx.inspect(collectArgs(declarationId));
      assert.equal(res.code, 0, `inspector exited ${res.code}:\n${res.stdout}\n${res.stderr}`);
      const out = parseJSON(res);
      assert.notEqual(out.isError, true, res.stdout);
      const text = textOfOut(out);
      const open = text.match(/<<<UNTRUSTED_EXTERNAL_CONTENT nonce=([0-9a-f]{32}) /);
      assert.ok(open, `no fence in ${JSON.stringify(text.slice(0, 400))}`);
      const body = text.slice(open.index, text.indexOf(`<<<END_UNTRUSTED_EXTERNAL_CONTENT nonce=${open[1]}>>>`));
      assert.match(body, /Quarterly outlook: steady\./, 'the content is inside the fence');
      assert.equal(out.structuredContent?.attribution?.declaration_id, declarationId);
      assert.equal(origin.hits, 1);
    });

    it('a third run cannot collect again: the approval is single-use', async () => {
      assert.ok(declarationId, 'process 1 produced no declaration');
      const res = await ctx.inspect(collectArgs(declarationId));
      assert.notEqual(res.code, 0, 'an isError result exits non-zero');
      assert.equal(parseJSON(res).isError, true);
      assert.match(res.stdout, /APPROVAL_REQUIRED: /);
      assert.equal(origin.hits, 1);
    });

    it('the audit trail verifies and shows the declaration, the approval and the fetch', async () => {
      await ctx.stop?.();
      const v = await auditVerify(ctx.state);
      assert.equal(v.code, 0, v.stdout + v.stderr);
      const recs = await auditRecords(ctx.state);
      assert.ok(recs.some((r) => r.capability === 'operator.approve'), 'operator.approve');
      assert.ok(recs.some((r) => r.tool === 'declare_need' && r.outcome === 'started'), 'the declaration');
      assert.ok(recs.some((r) => r.tool === 'declare_need' && r.outcome === 'ok' && r.extra?.state === 'executed'), 'the executed fetch');
    });
  });
}

// One long-running `airlock serve --http`; each inspector run is a new MCP
// session of the same principal (role agent, one bearer token).
approvalFlow('approval across processes: inspector CLI over streamable HTTP', async () => {
  const token = randomToken();
  const state = await tempState('approval-http');
  const server = await startHTTP({ state, config: CONFIG, env: { AIRLOCK_AGENT_TOKEN: token } });
  return {
    state,
    stop: () => server.stop(),
    inspect: (args) => run(NODE22, [INSPECTOR, '--cli', '--transport', 'http', '--server-url', `${server.baseUrl}/mcp`,
      '--header', `Authorization: Bearer ${token}`, ...args]),
  };
});

// Each inspector run starts its own `airlock serve` over stdio on the same
// state directory (principal: the local role); the server of process 1 is
// gone when process 3 collects.
approvalFlow('approval across processes: inspector CLI over stdio (a new airlock serve each time)', async () => {
  const state = await tempState('approval-stdio');
  return {
    state,
    inspect: (args) => run(NODE22, [INSPECTOR, '--cli', ...args, '--', AIRLOCK, 'serve', '--config', CONFIG, '--state', state, '--log-level', 'warn']),
  };
});
