// The official TypeScript SDK client drives `airlock serve --http` (embedded
// demo config) over the older SSE transport: GET /sse for the event stream,
// POST /message for requests. The bearer token must be on both.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { CLIENT_INFO, serveFresh, randomToken, teardown } from '../lib/airlock.mjs';
import { itServesTheToolSurface, expectViolation, checkAudit } from '../lib/checks.mjs';

const token = randomToken();

/** An SSE transport that sends the Authorization header on the event stream (GET) and on every POST. */
function sseTransport(url, bearer) {
  if (!bearer) return new SSEClientTransport(new URL(url));
  const auth = `Bearer ${bearer}`;
  return new SSEClientTransport(new URL(url), {
    eventSourceInit: {
      fetch: (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('Authorization', auth);
        return fetch(input, { ...init, headers });
      },
    },
    requestInit: { headers: { Authorization: auth } },
  });
}

describe('TypeScript SDK over SSE', () => {
  let state;
  let server;
  let client;

  before(async () => {
    ({ state, server } = await serveFresh('sse', { env: { AIRLOCK_AGENT_TOKEN: token } }));
    client = new Client(CLIENT_INFO);
    await client.connect(sseTransport(`${server.baseUrl}/sse`, token));
  });

  after(() => teardown({ clients: [client], servers: [server], states: [state] }));

  it('initializes with the demo server', () => {
    assert.equal(client.getServerVersion()?.name, 'airlock-demo');
  });

  itServesTheToolSurface(() => client, { unknowns: false });

  it('binds the agent role to its pools: web-notes is POOL_NOT_SELECTED', () =>
    expectViolation(client, 'read_pool_file', { pool: 'web-notes', path: '2026/competitor-notes.md' }, 'POOL_NOT_SELECTED'));

  it('rejects a client without a token (401)', async () => {
    const anon = new Client(CLIENT_INFO);
    await assert.rejects(anon.connect(sseTransport(`${server.baseUrl}/sse`)), (err) => {
      assert.equal(err.code, 401, `expected a 401, got ${err}`);
      return true;
    });
    await anon.close().catch(() => {});
    const res = await fetch(`${server.baseUrl}/sse`, { headers: { Accept: 'text/event-stream' } });
    assert.equal(res.status, 401);
    await res.body?.cancel();
  });

  it('leaves a verifiable audit trail that shows the calls', async () => {
    await client.close();
    client = null;
    await server.stop();
    const principal = 'agent/env:AIRLOCK_AGENT_TOKEN';
    await checkAudit(state, [
      { transport: 'sse', principal, tool: 'read_pool_file', outcome: 'ok' },
      { transport: 'sse', principal, tool: 'read_pool_file', violation: 'PATH_OUTSIDE_POOLS' },
      { transport: 'sse', principal, tool: 'read_pool_file', violation: 'POOL_NOT_SELECTED' },
      { transport: 'sse', principal: 'anonymous', capability: 'transport.edge', violation: 'UNAUTHENTICATED', decision: 'deny' },
    ]);
  });
});
