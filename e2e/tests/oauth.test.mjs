// OAuth 2.1 as the MCP authorization spec describes it, end to end: a real
// OpenID Provider on loopback (bin/testidp, zitadel's provider library),
// `airlock serve --http` configured as its resource server, and
//   - the TypeScript SDK's own OAuth client (client credentials, headless),
//     which starts from Airlock's 401, finds the protected resource metadata,
//     discovers the provider, gets a token and calls tools — no
//     Airlock-specific step;
//   - the inspector CLI with a token in an Authorization header;
//   - misdirected tokens refused with the spec's challenges and audited.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import {
  ROOT, E2E, NODE22, INSPECTOR, EXPECTED_TOOLS, CLIENT_INFO, requireBuilt, tempState, teardown, startHTTP, run, auditRecords, auditVerify, textOf, freePort,
} from '../lib/airlock.mjs';

const TESTIDP = path.join(ROOT, 'bin', 'testidp');

async function startIdP(dir, clients) {
  const file = path.join(dir, 'clients.json');
  await writeFile(file, JSON.stringify(clients));
  const proc = spawn(TESTIDP, ['-clients', file], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const [issuer] = await new Promise((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`testidp exited ${code}`)));
    proc.stdout.on('data', (b) => {
      out += b;
      const m = out.match(/^(http:\/\/127\.0\.0\.1:\d+)\n/);
      if (m) resolve([m[1]]);
    });
  });
  return { issuer, stop: async () => { proc.kill('SIGTERM'); await once(proc, 'exit'); } };
}

/** A token straight from the provider's token endpoint (client credentials). */
async function idpToken(issuer, id, secret, scope) {
  const meta = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
  const body = new URLSearchParams({ grant_type: 'client_credentials' });
  if (scope) body.set('scope', scope);
  const res = await fetch(meta.token_endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: 'Basic ' + Buffer.from(`${id}:${secret}`).toString('base64') },
    body,
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()).access_token;
}

async function postInit(url, token) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(url, {
    method: 'POST', headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: CLIENT_INFO } }),
  });
  await res.text();
  return { status: res.status, challenge: res.headers.get('www-authenticate') ?? '' };
}

describe('OAuth 2.1: a real authorization server, the SDK client and the inspector', () => {
  let state, idp, server, resource, mcpUrl;

  before(async () => {
    requireBuilt();
    if (!existsSync(TESTIDP)) throw new Error(`${TESTIDP} is missing: run \`make test-e2e\``);
    state = await tempState('oauth');
    const port = await freePort();
    mcpUrl = `http://127.0.0.1:${port}/mcp`;
    resource = mcpUrl;
    idp = await startIdP(state, [
      { id: 'agent', secret: 'agent-secret', audience: [resource] },
      { id: 'elsewhere', secret: 'elsewhere-secret', audience: ['http://127.0.0.1:1/mcp'] },
    ]);
    const config = path.join(state, 'airlock.yaml');
    await writeFile(config, `server: {name: airlock-oauth-e2e}
pools:
  - {id: notes, description: Test notes., path: ${path.join(E2E, 'testdata', 'pools', 'notes')}, trust: trusted}
policies:
  base: {allow: ["pool.*"]}
roles:
  local: {policy: base, pools: [notes]}
  reader: {policy: base, pools: [notes]}
transports:
  http:
    oauth:
      resource: "${resource}"
      scopes_supported: [airlock.read]
      issuers: [{issuer: "${idp.issuer}"}]
      role_mapping: [{role: reader, scopes: [airlock.read]}]
`);
    server = await startHTTP({ state, config, addr: `127.0.0.1:${port}` });
  });

  after(() => teardown({ servers: [server, idp], states: [state] }));

  it('publishes protected resource metadata naming the provider', async () => {
    const res = await fetch(`http://127.0.0.1:${new URL(mcpUrl).port}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      resource, authorization_servers: [idp.issuer], scopes_supported: ['airlock.read'], bearer_methods_supported: ['header'], resource_name: 'airlock-oauth-e2e',
    });
  });

  it('the SDK OAuth client (client credentials) authenticates with no Airlock-specific step and calls tools', async () => {
    const authProvider = new ClientCredentialsProvider({ clientId: 'agent', clientSecret: 'agent-secret', expectedIssuer: idp.issuer, scope: 'airlock.read' });
    const client = new Client(CLIENT_INFO);
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider }));
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort());
      const res = await client.callTool({ name: 'list_pools', arguments: {} });
      assert.ok(!res.isError, textOf(res));
      assert.match(textOf(res), /notes/);
      assert.ok(authProvider.tokens()?.access_token, 'the provider holds the token it obtained');
    } finally {
      await client.close();
    }
  });

  it('the inspector CLI calls tools with a token in an Authorization header', async () => {
    const token = await idpToken(idp.issuer, 'agent', 'agent-secret', 'airlock.read');
    const res = await run(NODE22, [INSPECTOR, '--cli', '--transport', 'http', '--server-url', mcpUrl,
      '--header', `Authorization: Bearer ${token}`, '--method', 'tools/list']);
    assert.equal(res.code, 0, `inspector exited ${res.code}:\n${res.stdout}\n${res.stderr}`);
    assert.deepEqual(JSON.parse(res.stdout).tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort());
  });

  it('refuses misdirected tokens with the spec\'s challenges', async () => {
    const metadata = `resource_metadata="http://127.0.0.1:${new URL(mcpUrl).port}/.well-known/oauth-protected-resource/mcp"`;
    let r = await postInit(mcpUrl, '');
    assert.equal(r.status, 401);
    assert.ok(r.challenge.includes(metadata), r.challenge);
    r = await postInit(mcpUrl, await idpToken(idp.issuer, 'elsewhere', 'elsewhere-secret', 'airlock.read'));
    assert.equal(r.status, 401, 'a token for another resource');
    assert.ok(r.challenge.includes('error="invalid_token"'), r.challenge);
    r = await postInit(mcpUrl, await idpToken(idp.issuer, 'agent', 'agent-secret', ''));
    assert.equal(r.status, 403, 'a valid token without the scope');
    assert.ok(r.challenge.includes('error="insufficient_scope", scope="airlock.read"'), r.challenge);
  });

  it('audits the OAuth principal as issuer|sub with its client, and the refusals', async () => {
    await server.stop(); // flushes the edge's refusal counts
    const records = await auditRecords(state);
    const principal = `${idp.issuer}|agent`;
    const call = records.find((r) => r.tool === 'list_pools' && r.principal === principal);
    assert.ok(call, 'a list_pools record for issuer|sub');
    assert.equal(JSON.parse(typeof call.extra === 'string' ? call.extra : JSON.stringify(call.extra)).client_id, 'agent');
    assert.ok(records.some((r) => r.violation === 'UNAUTHENTICATED' && /audience/.test(r.reason)), 'the wrong audience refusal');
    assert.ok(records.some((r) => r.violation === 'INSUFFICIENT_SCOPE' && r.principal === principal), 'the 403');
    const v = await auditVerify(state);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });
});
