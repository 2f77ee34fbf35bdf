// The web console (issue 12 item 1) in a real browser: Debian's Chromium
// driven by playwright-core. An agent (the TypeScript SDK client over
// streamable HTTP) declares fetches that wait for a person; the admin logs
// in at /console, sees them arrive, approves one (the agent's collection
// succeeds) and denies another, filters the audit trail, trips the kill
// switch (the agent's next call is refused) and releases it; a POST
// without the session's CSRF token, made from the page itself, is refused.
// The Upstreams page reviews the tools of a real upstream (the official
// "everything" server over streamable HTTP): refresh lists them pending,
// approving one (with a reason) lets the agent call it.
// Screenshots of each page go to e2e/artifacts/console/.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { E2E, CLIENT_INFO, startEverythingHTTP, requireBuilt, tempState, teardown, startHTTP, startOrigin, randomToken, textOf, auditVerify, auditRecords } from '../lib/airlock.mjs';

const CHROMIUM = process.env.AIRLOCK_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = path.join(E2E, 'artifacts', 'console');
const agentToken = randomToken();
const adminToken = randomToken();
describe('the web console in Chromium', () => {
  let state;
  let server;
  let agent;
  let origin;
  let browser;
  let profile;
  let page;
  let upstream;
  let configDir;
  const ids = {};

  before(async () => {
    requireBuilt();
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run \`make browser-deps\``);
    await mkdir(SHOTS, { recursive: true });
    origin = await startOrigin((p) => `Page ${p}: the outlook is steady.\n`);
    state = await tempState('console');
    // console.yaml with the everything server as an HTTP upstream (its
    // port is known only now), the pool path made absolute.
    upstream = await startEverythingHTTP();
    configDir = await tempState('console-config');
    const config = path.join(configDir, 'console.yaml');
    const base = await readFile(path.join(E2E, 'console.yaml'), 'utf8');
    await writeFile(config, base
      .replace('path: testdata/pools/notes', `path: ${path.join(E2E, 'testdata', 'pools', 'notes')}`)
      .replace('allow: ["pool.*", "comm.fetch", "pipeline.run:*"]', 'allow: ["pool.*", "comm.fetch", "pipeline.run:*", "mcp.everything.echo"]')
      + `\nupstreams:\n  - id: everything\n    url: ${upstream.url}\n`);
    server = await startHTTP({ state, config, env: { AIRLOCK_AGENT_TOKEN: agentToken, AIRLOCK_ADMIN_TOKEN: adminToken } });
    agent = new Client(CLIENT_INFO);
    await agent.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${agentToken}` } } }));
    profile = await mkdtemp(path.join(tmpdir(), 'airlock-e2e-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 900 },
    });
    page = browser.pages()[0] ?? await browser.newPage();
  });

  after(async () => {
    await teardown({ clients: [browser, agent], servers: [server], states: [state, configDir] });
    origin?.close();
    upstream?.stop();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  const call = (name, args = {}) => agent.callTool({ name, arguments: args });
  const declare = async (p, userRequest) => {
    const res = await call('declare_need', {
      operation: 'comm.fetch',
      parameters: { url: origin.base + p },
      justification: { user_request: userRequest, missing_knowledge: 'The published page.', expected_use: 'Quote it.' },
    });
    assert.notEqual(res.isError, true, textOf(res));
    assert.equal(res.structuredContent.state, 'declared');
    return res.structuredContent.declaration_id;
  };
  const shot = (name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

  it('the agent declares a fetch that waits for a person', async () => {
    ids.first = await declare('/first', 'What does the first page say?');
    assert.equal(origin.hits, 0);
  });

  it('the console sends an anonymous visitor to the login form; a non-admin token is refused', async () => {
    await page.goto(`${server.baseUrl}/console/`);
    assert.match(page.url(), /\/console\/login$/);
    await shot('login');
    await page.fill('input[name=token]', agentToken);
    await page.click('button[type=submit]');
    assert.match(await page.textContent('.error'), /not an admin token/);
    assert.equal((await browser.cookies()).filter((c) => c.name === 'airlock-console').length, 0);
  });

  it('the admin logs in: the session cookie is Secure, HttpOnly and SameSite=Strict, kept on http://127.0.0.1', async () => {
    await page.fill('input[name=token]', adminToken);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/console\/approvals$/);
    const [cookie] = (await browser.cookies()).filter((c) => c.name === 'airlock-console');
    assert.ok(cookie, 'Chromium kept the Secure cookie over http://127.0.0.1');
    assert.equal(cookie.secure, true);
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(await page.evaluate(() => document.cookie), '', 'script cannot read the session cookie');
  });

  it('the pending declaration is listed with what, why, where and the policy rule, and a new one appears live', async () => {
    const first = page.locator(`section[data-id="${ids.first}"]`);
    await first.waitFor();
    const text = await first.textContent();
    assert.match(text, /comm\.fetch/);
    assert.match(text, /What does the first page say\?/);
    assert.match(text, /\/first/);
    assert.match(text, /fetches-need-a-person/);
    ids.second = await declare('/second', 'And the second one?');
    // No reload by the test: the page's script polls and reloads.
    await page.locator(`section[data-id="${ids.second}"]`).waitFor({ timeout: 15_000 });
    await shot('approvals');
  });

  it('approving with a reason lets the agent collect its fetch', async () => {
    const first = page.locator(`section[data-id="${ids.first}"]`);
    await first.locator('input[name=reason]').fill('e2e: checked the host');
    await first.locator('button[value=approve]').click();
    await page.waitForURL(/done=approved/);
    assert.match(await page.textContent('.message'), /Approved/);
    const res = await call('declare_need', { declaration_id: ids.first });
    assert.notEqual(res.isError, true, textOf(res));
    assert.match(textOf(res), /<<<UNTRUSTED_EXTERNAL_CONTENT nonce=[0-9a-f]{32} /);
    assert.match(textOf(res), /Page \/first: the outlook is steady\./);
    assert.equal(origin.hits, 1);
  });

  it('denying with a reason refuses the other, and the agent is told why', async () => {
    const second = page.locator(`section[data-id="${ids.second}"]`);
    await second.locator('input[name=reason]').fill('e2e: not needed');
    await second.locator('button[value=deny]').click();
    await page.waitForURL(/done=denied/);
    const res = await call('declare_need', { declaration_id: ids.second });
    assert.equal(res.isError, true);
    assert.match(textOf(res), /not needed/);
    assert.equal(origin.hits, 1);
  });

  it('the agent runs a pipeline, and the runs page shows its outputs and evidence', async () => {
    const res = await call('run_pipeline', { pipeline: 'list_notes' });
    assert.notEqual(res.isError, true, textOf(res));
    await page.goto(`${server.baseUrl}/console/runs`);
    const run = page.locator('section.run').first();
    assert.match(await run.textContent(), /list_notes/);
    assert.match(await run.textContent(), /list\.txt/);
    assert.match(await run.textContent(), /exit 0/);
    await shot('runs');
  });

  it('the audit browser filters by tool/capability and shows the chain and witness verified', async () => {
    await page.goto(`${server.baseUrl}/console/audit`);
    assert.match(await page.textContent('#verification'), /Hash chain intact/);
    await page.fill('form.filter input[name=tool]', 'operator.approve');
    await page.click('form.filter button[type=submit]');
    await page.waitForURL(/tool=operator\.approve/);
    const rows = page.locator('table.audit tbody tr');
    assert.equal(await rows.count(), 1);
    assert.match(await rows.first().textContent(), /e2e: checked the host/);
    assert.match(await rows.first().textContent(), /operator:admin\/env:AIRLOCK_ADMIN_TOKEN/);
    await page.selectOption('form.filter select[name=decision]', 'require_approval');
    await page.fill('form.filter input[name=tool]', 'declare_need');
    await page.click('form.filter button[type=submit]');
    await page.waitForURL(/tool=declare_need/);
    // Decision is the 7th column: every row shown is a declare_need the
    // policy sent to a person.
    const decisions = await page.locator('table.audit tbody tr td:nth-child(7)').allTextContents();
    const tools = await page.locator('table.audit tbody tr td:nth-child(6)').allTextContents();
    assert.ok(decisions.length >= 2, await page.textContent("table.audit"));
    assert.deepEqual([...new Set(decisions)], ['require_approval']);
    assert.ok(tools.every((t) => t.startsWith('declare_need')), tools.join(','));
    await shot('audit');
  });

  it('contexts and a context with its Sources Used report', async () => {
    await page.goto(`${server.baseUrl}/console/contexts`);
    await shot('contexts');
    await page.locator('table tbody tr', { hasText: 'agent/env:AIRLOCK_AGENT_TOKEN' }).locator('a').first().click();
    await page.waitForURL(/\/console\/contexts\//);
    const body = await page.textContent('main');
    assert.match(body, /execution/);
    assert.match(body, /notes/);
    assert.match(body, /## Sources Used/);
    await shot('context');
  });

  it('the kill switch refuses the agent\'s next call, and releasing it lets calls through', async () => {
    await page.goto(`${server.baseUrl}/console/kill`);
    await page.fill('form.kill input[name=reason]', 'e2e: incident drill');
    await page.click('form.kill button[value=engage]');
    await page.waitForURL(/done=engaged/);
    assert.match(await page.textContent('#kill-state'), /ENGAGED/);
    await shot('kill');
    const refused = await call('list_pools');
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /^KILL_SWITCH_ENGAGED: /);
    await page.fill('form.kill input[name=reason]', 'e2e: drill over');
    await page.click('form.kill button[value=release]');
    await page.waitForURL(/done=released/);
    const ok = await call('list_pools');
    assert.notEqual(ok.isError, true, textOf(ok));
  });

  it('the Upstreams page: refresh lists the upstream\'s tools pending; approving echo with a reason lets the agent call it', async () => {
    const need = { operation: 'comm.mcp', parameters: { upstream: 'everything', tool: 'echo', arguments: { message: 'hi' } },
      justification: { user_request: 'Echo it.', missing_knowledge: 'What echo says.', expected_use: 'Show it.' } };
    const before = await call('declare_need', need);
    assert.equal(before.isError, true);
    assert.match(textOf(before), /^UPSTREAM_DEFINITION_NOT_APPROVED: /);
    await page.goto(`${server.baseUrl}/console/upstreams`);
    await page.click('form.refresh button[type=submit]');
    await page.waitForSelector('div.tool[data-tool="echo"][data-state="pending"]');
    const echo = page.locator('div.tool[data-tool="echo"]');
    assert.match(await echo.locator('.description').textContent(), /echo/i);
    // Issue 25: every listed tool shows the review's score and verdict;
    // echo is not flagged, so its form offers no override.
    assert.equal(await echo.locator('.review').getAttribute('data-flagged'), 'false');
    assert.equal(await echo.locator('input[name=override]').count(), 0);
    assert.ok(await page.locator('div.tool .review').count() >= 5);
    await shot('upstreams');
    await echo.locator('input[name=reason]').fill('e2e: echo is harmless');
    await echo.locator('form.approve-tool button[type=submit]').click();
    await page.waitForURL(/done=upstream/);
    assert.equal(await page.getAttribute('div.tool[data-tool="echo"]', 'data-state'), 'approved');
    const res = await call('declare_need', need);
    assert.notEqual(res.isError, true, textOf(res));
    assert.match(textOf(res), /<<<UNTRUSTED_EXTERNAL_CONTENT nonce=[0-9a-f]{32} /);
    assert.match(textOf(res), /hi/);
    await page.goto(`${server.baseUrl}/console/kill`); // where the next test forges its POST
  });

  it('every page fits a 1280 px window and a 390 px phone: no page scrolls sideways, definitions stay collapsed', async () => {
    // Volume first: a long reason and a run of calls, as a day's trail has.
    for (let i = 0; i < 30; i++) await call('list_pools');
    await call('read_pool_file', { pool: 'notes', path: 'x'.repeat(300) });
    const pages = ['approvals', 'audit', 'contexts', 'runs', 'upstreams', 'kill'];
    for (const [width, height] of [[1280, 900], [390, 844]]) {
      await page.setViewportSize({ width, height });
      for (const name of pages) {
        await page.goto(`${server.baseUrl}/console/${name}`);
        const scroll = await page.evaluate(() => document.documentElement.scrollWidth);
        assert.ok(scroll <= width, `${name} at ${width} px is ${scroll} px wide`);
        await shot(`${name}-${width}`);
      }
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${server.baseUrl}/console/upstreams`);
    assert.ok(await page.locator('details.definition').count() > 0, 'the upstream page shows the schemas behind a toggle');
    assert.equal(await page.locator('details.definition[open]').count(), 0, 'upstream schemas are collapsed');
    await page.goto(`${server.baseUrl}/console/audit`);
    // Rows on the first screen at 1280 x 900 (it was about 9).
    const onScreen = await page.evaluate(() => [...document.querySelectorAll('table.audit tbody tr')]
      .filter((tr) => tr.getBoundingClientRect().bottom <= window.innerHeight).length);
    assert.ok(onScreen >= 15, `${onScreen} audit rows fit the first screen`);
    await page.goto(`${server.baseUrl}/console/kill`); // where the next test forges its POST
  });

  it('a POST without the CSRF token, from the console page itself with its cookie, is refused 403', async () => {
    const status = await page.evaluate(async () => {
      const r = await fetch('/console/kill', { method: 'POST', body: new URLSearchParams({ action: 'engage', reason: 'forged' }) });
      return r.status;
    });
    assert.equal(status, 403);
    await page.reload();
    assert.match(await page.textContent('#kill-state'), /Released/);
    const refused = await call('list_pools');
    assert.notEqual(refused.isError, true, textOf(refused));
  });

  it('logging out ends the session', async () => {
    await page.click('form.logout button');
    await page.waitForURL(/\/console\/login$/);
    await page.goto(`${server.baseUrl}/console/approvals`);
    assert.match(page.url(), /\/console\/login/);
  });

  it('every console action is in the audit trail with the admin and the reason, and the trail verifies', async () => {
    await agent.close();
    agent = null;
    await server.stop();
    const v = await auditVerify(state);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    const recs = await auditRecords(state);
    const admin = 'operator:admin/env:AIRLOCK_ADMIN_TOKEN';
    const byCap = (cap) => recs.filter((r) => r.capability === cap && r.principal === admin);
    assert.deepEqual(byCap('operator.approve').map((r) => [r.transport, r.reason]), [['console', 'e2e: checked the host']]);
    assert.deepEqual(byCap('operator.deny').map((r) => [r.transport, r.reason]), [['console', 'e2e: not needed']]);
    assert.deepEqual(byCap('operator.kill_switch').map((r) => r.reason), ['e2e: incident drill', 'e2e: drill over']);
    const up = byCap('operator.upstream_approve');
    assert.equal(up.length, 1);
    assert.equal(up[0].transport, 'console');
    assert.match(up[0].reason, /^e2e: echo is harmless \(approved tool definition sha256:[0-9a-f]{64}\)$/);
    assert.equal(byCap('operator.console_login').length, 1);
    assert.equal(byCap('operator.console_logout').length, 1);
    assert.ok(recs.some((r) => r.transport === 'console' && r.violation === 'CSRF_REFUSED'), 'the forged POST is audited');
    assert.ok(recs.some((r) => r.transport === 'console' && r.violation === 'INSUFFICIENT_SCOPE'), 'the agent token\'s login is audited');
  });
});
