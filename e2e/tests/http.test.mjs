// The official TypeScript SDK client drives `airlock serve --http` (embedded
// demo config) over streamable HTTP at /mcp, as a hosted agent would: role
// `agent`, bearer token from AIRLOCK_AGENT_TOKEN, bound to pool `sales` only.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLIENT_INFO, teardown, serveFresh, randomToken } from '../lib/airlock.mjs';
import { itServesTheToolSurface, expectViolation, checkAudit } from '../lib/checks.mjs';

const token = randomToken();

function connect(url, headers) {
  const client = new Client(CLIENT_INFO);
  const transport = new StreamableHTTPClientTransport(new URL(url), headers ? { requestInit: { headers } } : undefined);
  return client.connect(transport).then(() => client);
}

describe('TypeScript SDK over streamable HTTP', () => {
  let state;
  let server;
  let client;

  before(async () => {
    ({ state, server } = await serveFresh('http', { env: { AIRLOCK_AGENT_TOKEN: token } }));
    client = await connect(`${server.baseUrl}/mcp`, { Authorization: `Bearer ${token}` });
  });

  after(() => teardown({ clients: [client], servers: [server], states: [state] }));

  it('initializes on a session-oriented protocol version with a session id', () => {
    assert.equal(client.getServerVersion()?.name, 'airlock-demo');
    assert.ok(client.transport.sessionId, 'the server assigned an Mcp-Session-Id');
    assert.ok(client.transport.protocolVersion <= '2025-11-25', `negotiated ${client.transport.protocolVersion}`);
  });

  it('answers a client asking for the sessionless 2026-07-28 revision with a session-oriented one', async () => {
    const res = await fetch(`${server.baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2026-07-28', capabilities: {}, clientInfo: CLIENT_INFO } }),
    });
    const body = await res.text();
    assert.equal(res.status, 200, body);
    const json = res.headers.get('content-type')?.includes('text/event-stream')
      ? JSON.parse(body.split('\n').find((l) => l.startsWith('data:')).slice(5))
      : JSON.parse(body);
    assert.ok(json.result?.protocolVersion <= '2025-11-25', `negotiated ${json.result?.protocolVersion}`);
    assert.ok(res.headers.get('mcp-session-id'), 'an Mcp-Session-Id header');
  });

  itServesTheToolSurface(() => client);

  it('binds the agent role to its pools: web-notes is POOL_NOT_SELECTED', async () => {
    await expectViolation(client, 'read_pool_file', { pool: 'web-notes', path: '2026/competitor-notes.md' }, 'POOL_NOT_SELECTED');
    const res = await client.callTool({ name: 'list_pools', arguments: {} });
    assert.notEqual(res.isError, true);
    const text = res.content.map((c) => c.text ?? '').join('\n');
    assert.match(text, /\bsales\b/);
    assert.doesNotMatch(text, /web-notes/, 'list_pools shows only the bound pools');
  });

  it('rejects a client without a token (401)', async () => {
    await assert.rejects(connect(`${server.baseUrl}/mcp`), (err) => {
      assert.equal(err.code, 401, `expected a 401, got ${err}`);
      return true;
    });
    const res = await fetch(`${server.baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: CLIENT_INFO } }),
    });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/i);
  });

  it('rejects a client with a wrong token (401)', async () => {
    await assert.rejects(connect(`${server.baseUrl}/mcp`, { Authorization: 'Bearer not-the-token' }), (err) => {
      assert.equal(err.code, 401, `expected a 401, got ${err}`);
      return true;
    });
  });

  it('leaves a verifiable audit trail that shows the calls', async () => {
    await client.close();
    client = null;
    const status = await server.stop();
    assert.ok(status.code === 0 || status.signal === 'SIGTERM', `airlock serve exited ${JSON.stringify(status)}:\n${server.stderr()}`);
    const principal = 'agent/env:AIRLOCK_AGENT_TOKEN';
    await checkAudit(state, [
      { transport: 'streamable-http', principal, tool: 'read_pool_file', outcome: 'ok' },
      { transport: 'streamable-http', principal, tool: 'read_pool_file', violation: 'PATH_OUTSIDE_POOLS' },
      { transport: 'streamable-http', principal, tool: 'read_pool_file', violation: 'UNKNOWN_POOL_ID' },
      { transport: 'streamable-http', principal, tool: 'read_pool_file', violation: 'POOL_NOT_SELECTED' },
      { transport: 'streamable-http', principal: 'anonymous', capability: 'transport.edge', violation: 'UNAUTHENTICATED', decision: 'deny', reason: 'no bearer token' },
      { transport: 'streamable-http', principal: 'anonymous', capability: 'transport.edge', violation: 'UNAUTHENTICATED', decision: 'deny', reason: 'bearer token not recognised' },
    ]);
  });
});

// Issue 26 item 3: a new user's loop — connect, call, close() — with the
// TypeScript SDK v1, whose close() ends the transport without a DELETE.
// Every session stays open until it idles out, and before the fix the
// 17th connection (the 14th in the report, beside other sessions) got 429
// SESSION_LIMIT for the rest of the idle timeout. At the cap the least
// recently used session is now evicted (audited), so the loop never stops.
describe('TypeScript SDK over streamable HTTP: short-lived clients', () => {
  let state;
  let server;

  before(async () => {
    ({ state, server } = await serveFresh('http-short', { env: { AIRLOCK_AGENT_TOKEN: token } }));
  });

  after(() => teardown({ servers: [server], states: [state] }));

  it('connect → call → close() 100 times is never locked out', async () => {
    const sessions = new Set();
    for (let i = 1; i <= 100; i++) {
      const c = await connect(`${server.baseUrl}/mcp`, { Authorization: `Bearer ${token}` }).catch((err) => {
        throw new Error(`connection ${i} of 100 refused: ${err}`);
      });
      sessions.add(c.transport.sessionId);
      const res = await c.callTool({ name: 'list_pools', arguments: {} });
      assert.notEqual(res.isError, true, `connection ${i}: ${JSON.stringify(res)}`);
      await c.close();
    }
    assert.equal(sessions.size, 100, 'each connection got a session of its own');
  });

  it('audits each eviction and keeps the principal at the cap', async () => {
    const status = await server.stop();
    assert.ok(status.code === 0 || status.signal === 'SIGTERM', `airlock serve exited ${JSON.stringify(status)}:\n${server.stderr()}`);
    const principal = 'agent/env:AIRLOCK_AGENT_TOKEN';
    const recs = await checkAudit(state, [
      { transport: 'streamable-http', principal, capability: 'session.evict', decision: 'allow', outcome: 'ok', reason: /max_sessions_per_principal/ },
    ]);
    const evicted = recs.filter((r) => r.capability === 'session.evict').length;
    const opened = recs.filter((r) => r.capability === 'session.open').length;
    assert.equal(opened, 100);
    assert.equal(evicted, 100 - 16, 'every session over the default cap of 16 evicted one');
    assert.equal(recs.filter((r) => r.violation === 'SESSION_LIMIT').length, 0);
  });
});
