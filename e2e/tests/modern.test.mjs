// The sessionless protocol revision 2026-07-28 over streamable HTTP, side by
// side with a 2025-11-25 client on the same server: `airlock serve --http`
// (embedded demo config), role `agent`, bearer token from AIRLOCK_AGENT_TOKEN.
//
// The modern client is the TypeScript SDK v2 (@modelcontextprotocol/client,
// the first line that speaks 2026-07-28: server/discover, the per-request
// _meta envelope, Mcp-Method / Mcp-Name headers, no session); the legacy one is
// the v1 SDK (@modelcontextprotocol/sdk) the other tests use. One test also
// writes the modern requests by hand, so the wire format is pinned here too.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLIENT_INFO, EXPECTED_TOOLS, teardown, serveFresh, randomToken, textOf } from '../lib/airlock.mjs';
import { checkToolList, checkReadTrusted, checkPathOutside, expectViolation, checkAudit } from '../lib/checks.mjs';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const token = randomToken();
const auth = { Authorization: `Bearer ${token}` };

/** A v2 SDK client; mode 'auto' probes with server/discover, { pin } insists on one revision. */
async function connectModern(url, mode = { pin: MODERN }, headers = auth) {
  const client = new ModernClient(CLIENT_INFO, { versionNegotiation: { mode } });
  await client.connect(new ModernTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

async function connectLegacy(url) {
  const client = new LegacyClient(CLIENT_INFO);
  await client.connect(new LegacyTransport(new URL(url), { requestInit: { headers: auth } }));
  return client;
}

/**
 * One 2026-07-28 request written by hand: the Mcp-Protocol-Version,
 * Mcp-Method (and, for tools/call, Mcp-Name) headers, and the _meta envelope
 * (protocol version, client info, client capabilities) in params.
 */
async function modernRequest(url, method, params = {}, { headers = auth, id = 1 } = {}) {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const h = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'Mcp-Protocol-Version': MODERN,
    'Mcp-Method': method,
    ...headers,
  };
  if (method === 'tools/call') h['Mcp-Name'] = params.name;
  const res = await fetch(url, {
    method: 'POST',
    headers: h,
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...meta, ...(params._meta ?? {}) } } }),
  });
  const body = await res.text();
  let json = null;
  if (res.headers.get('content-type')?.includes('text/event-stream')) {
    const data = body.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
    json = data.find((m) => m.id === id) ?? null;
  } else if (body.trim().startsWith('{')) {
    json = JSON.parse(body);
  }
  return { status: res.status, headers: res.headers, body, json };
}

describe('protocol 2026-07-28 (SDK v2) beside 2025-11-25 (SDK v1) over streamable HTTP', () => {
  let state;
  let server;
  let url;
  let modern;
  let legacy;

  before(async () => {
    ({ state, server } = await serveFresh('modern', { env: { AIRLOCK_AGENT_TOKEN: token } }));
    url = `${server.baseUrl}/mcp`;
  });

  after(() => teardown({ clients: [modern, legacy], servers: [server], states: [state] }));

  it('a v2 client pinned to 2026-07-28 connects through server/discover, with no session', async () => {
    modern = await connectModern(url);
    assert.equal(modern.getProtocolEra(), 'modern');
    assert.equal(modern.getNegotiatedProtocolVersion(), MODERN);
    const discover = modern.getDiscoverResult();
    assert.ok(discover?.supportedVersions?.includes(MODERN), `server/discover offers ${JSON.stringify(discover?.supportedVersions)}`);
    assert.ok(discover.supportedVersions.includes(LEGACY), 'and still the session-oriented revision');
    assert.ok(discover.capabilities?.tools, 'tools capability');
    assert.equal(modern.getServerVersion()?.name, 'airlock-demo');
    assert.equal(modern.transport.sessionId, undefined, 'no Mcp-Session-Id on the sessionless revision');
  });

  it('a v2 client in auto mode negotiates 2026-07-28 too', async () => {
    const client = await connectModern(url, 'auto');
    try {
      assert.equal(client.getProtocolEra(), 'modern');
      assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    } finally {
      await client.close();
    }
  });

  it('the legacy v1 client, on the same server at the same time, initializes a 2025-11-25 session', async () => {
    legacy = await connectLegacy(url);
    assert.equal(legacy.transport.protocolVersion, LEGACY);
    assert.ok(legacy.transport.sessionId, 'the server assigned an Mcp-Session-Id');
    assert.equal(legacy.getServerVersion()?.name, 'airlock-demo');
  });

  it('tools/list on 2026-07-28 is exactly the Airlock tools, each with a closed input schema', () => checkToolList(modern));

  it('tools/list on 2025-11-25 is the same list', async () => {
    const a = (await modern.listTools()).tools.map((t) => t.name).sort();
    const b = (await legacy.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(a, [...EXPECTED_TOOLS].sort());
    assert.deepEqual(b, a);
  });

  it('both read sales/regions.csv, interleaved', async () => {
    await checkReadTrusted(modern);
    await checkReadTrusted(legacy);
    await checkReadTrusted(modern);
  });

  it('the agent role binds the modern client too: web-notes is POOL_NOT_SELECTED, ../ is PATH_OUTSIDE_POOLS', async () => {
    await expectViolation(modern, 'read_pool_file', { pool: 'web-notes', path: '2026/competitor-notes.md' }, 'POOL_NOT_SELECTED');
    await checkPathOutside(modern);
  });

  it('by hand: server/discover with the Mcp-* headers and the _meta envelope', async () => {
    const res = await modernRequest(url, 'server/discover');
    assert.equal(res.status, 200, res.body);
    assert.ok(res.json?.result, res.body);
    assert.ok(res.json.result.supportedVersions.includes(MODERN));
    assert.equal(res.json.result._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'airlock-demo');
    assert.equal(res.headers.get('mcp-session-id'), null, 'no session on 2026-07-28');
  });

  it('by hand: tools/call read_pool_file with Mcp-Name and Mcp-Param-Pool', async () => {
    // read_pool_file's `pool` carries x-mcp-header: Pool, so the pool named
    // in the body must also be in the Mcp-Param-Pool header (SEP-2243).
    const res = await modernRequest(url, 'tools/call', { name: 'read_pool_file', arguments: { pool: 'sales', path: 'regions.csv' } },
      { id: 2, headers: { ...auth, 'Mcp-Param-Pool': 'sales' } });
    assert.equal(res.status, 200, res.body);
    assert.notEqual(res.json?.result?.isError, true, res.body);
    assert.equal(res.json.result.resultType, 'complete');
    assert.match(textOf(res.json.result), /region,quarter,units,revenue_eur/);
  });

  it('by hand: a missing or disagreeing Mcp-Param-Pool header is refused (HTTP 400)', async () => {
    for (const headers of [auth, { ...auth, 'Mcp-Param-Pool': 'web-notes' }]) {
      const res = await modernRequest(url, 'tools/call', { name: 'read_pool_file', arguments: { pool: 'sales', path: 'regions.csv' } }, { id: 4, headers });
      assert.equal(res.status, 400, res.body);
      assert.doesNotMatch(res.body, /region,quarter/);
    }
  });

  it('by hand: an Mcp-Name header that disagrees with the body is refused (HTTP 400)', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'list_pools', ...auth },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'read_pool_file', arguments: { pool: 'sales', path: 'regions.csv' },
        _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientInfo': CLIENT_INFO, 'io.modelcontextprotocol/clientCapabilities': {} } } }),
    });
    const body = await res.text();
    assert.equal(res.status, 400, body);
    assert.doesNotMatch(body, /region,quarter/);
  });

  it('a 2026-07-28 request without a token is refused (401) before it reaches MCP', async () => {
    const res = await modernRequest(url, 'server/discover', {}, { headers: {} });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/i);
    await assert.rejects(connectModern(url, { pin: MODERN }, {}));
  });

  it('leaves a verifiable audit trail with both clients\' reads', async () => {
    await modern.close();
    await legacy.close();
    modern = legacy = null;
    await server.stop();
    const principal = 'agent/env:AIRLOCK_AGENT_TOKEN';
    const recs = await checkAudit(state, [
      { transport: 'streamable-http', principal, tool: 'read_pool_file', outcome: 'ok' },
      { transport: 'streamable-http', principal, tool: 'read_pool_file', violation: 'POOL_NOT_SELECTED' },
      { transport: 'streamable-http', principal, tool: 'read_pool_file', violation: 'PATH_OUTSIDE_POOLS' },
      { transport: 'streamable-http', principal: 'anonymous', capability: 'transport.edge', violation: 'UNAUTHENTICATED', decision: 'deny' },
    ]);
    // 3 SDK reads + 1 by hand, from both protocol revisions.
    const reads = recs.filter((r) => r.tool === 'read_pool_file' && r.outcome === 'ok');
    assert.ok(reads.length >= 4, `expected at least 4 successful reads, got ${reads.length}`);
  });
});
