// Scale-out (issue 14): three `airlock serve --http` instances, each with
// its own state directory, on one PostgreSQL database, behind HAProxy from
// Debian's package. The TypeScript SDK client talks to the balancer only;
// its calls spread over the instances, and the instances keep one audit
// chain that `airlock audit verify` accepts from every state directory.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AIRLOCK, CLIENT_INFO, requireBuilt, tempState, teardown, startHTTP, randomToken, run, textOf } from '../lib/airlock.mjs';
import { missingParts, pgCluster, createDatabase, psql, startHAProxy } from '../lib/scaleout.mjs';

const token = randomToken();
const INSTANCES = 3;
const missing = missingParts();
if (missing.length && process.env.CI) throw new Error(`scale-out e2e needs ${missing.join(', ')}`);

describe('three instances on PostgreSQL behind HAProxy', { skip: missing.length ? `missing ${missing.join(', ')}` : false }, () => {
  let cluster;
  let dsn;
  const states = [];
  const servers = [];
  let lb;
  let client;

  before(async () => {
    requireBuilt();
    cluster = await pgCluster();
    dsn = await createDatabase(cluster.dsn);
    for (let i = 0; i < INSTANCES; i++) {
      const state = await tempState(`scaleout-${i}`);
      states.push(state);
      servers.push(await startHTTP({ state, env: { AIRLOCK_AGENT_TOKEN: token, AIRLOCK_STORE: dsn } }));
    }
    lb = await startHAProxy(servers.map((s) => s.baseUrl));
    client = new Client(CLIENT_INFO);
    await client.connect(new StreamableHTTPClientTransport(new URL(`${lb.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  });

  after(async () => {
    await teardown({ clients: [client], servers: [lb, ...servers], states });
    await cluster?.stop();
  });

  it('serves one session through the balancer, whichever instance answers', async () => {
    for (let i = 0; i < 12; i++) {
      const res = await client.callTool({ name: 'read_pool_file', arguments: { pool: 'sales', path: 'regions.csv' } });
      assert.notEqual(res.isError, true, textOf(res));
      assert.match(textOf(res), /region/i);
    }
  });

  it('spreads the calls over all three instances, which share one chain', async () => {
    // The stored rows are compact (strings interned, fields packed): read
    // them back through the export.
    const exp = await run(AIRLOCK, ['audit', 'export', '--state', states[0]], { env: { ...process.env, AIRLOCK_STORE: dsn } });
    assert.equal(exp.code, 0, exp.stderr);
    const counts = {};
    for (const line of exp.stdout.trim().split('\n')) {
      const r = JSON.parse(line);
      if (r.tool === 'read_pool_file') counts[r.instance] = (counts[r.instance] ?? 0) + 1;
    }
    assert.equal(Object.keys(counts).length, INSTANCES, `read_pool_file records by instance: ${JSON.stringify(counts)}`);
    for (const n of Object.values(counts)) assert.ok(n >= 2, `uneven spread: ${JSON.stringify(counts)}`);
  });

  it('airlock kill beside one instance stops all three; the release frees them', async () => {
    const env = { ...process.env, AIRLOCK_STORE: dsn };
    const kill = await run(AIRLOCK, ['kill', '--state', states[0], '--reason', 'e2e drill'], { env });
    assert.equal(kill.code, 0, kill.stdout + kill.stderr);
    for (let i = 0; i < 6; i++) { // two rounds of the three instances
      const res = await client.callTool({ name: 'read_pool_file', arguments: { pool: 'sales', path: 'regions.csv' } });
      assert.equal(res.isError, true, 'a call went through after the kill');
      assert.match(textOf(res), /KILL_SWITCH_ENGAGED/);
    }
    const release = await run(AIRLOCK, ['kill', '--release', '--state', states[0], '--reason', 'drill over'], { env });
    assert.equal(release.code, 0, release.stdout + release.stderr);
    for (let i = 0; i < 6; i++) {
      const res = await client.callTool({ name: 'read_pool_file', arguments: { pool: 'sales', path: 'regions.csv' } });
      assert.notEqual(res.isError, true, textOf(res));
    }
  });

  it('keeps one verifiable audit chain: airlock audit verify passes from every state directory', async () => {
    await client.close();
    client = null;
    await lb.stop();
    lb = null;
    for (const s of servers) await s.stop();
    for (const state of states) {
      const res = await run(AIRLOCK, ['audit', 'verify', '--state', state], { env: { ...process.env, AIRLOCK_STORE: dsn } });
      assert.equal(res.code, 0, `${state}: ${res.stdout}${res.stderr}`);
      assert.match(res.stdout, /OK/);
    }
  });

  it('airlock audit verify catches a record edited in the database', async () => {
    await psql(dsn, `UPDATE audit_records SET args = convert_to('{"nothing":"to see"}', 'UTF8') WHERE seq = 3`);
    const res = await run(AIRLOCK, ['audit', 'verify', '--state', states[0]], { env: { ...process.env, AIRLOCK_STORE: dsn } });
    assert.notEqual(res.code, 0);
    assert.match(res.stdout + res.stderr, /BROKEN at record 3/);
  });
});
