// The official TypeScript SDK client drives `airlock serve` (embedded demo
// config) over stdio, as Claude Desktop or an IDE agent would.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AIRLOCK, ROOT, CLIENT_INFO, requireBuilt, tempState, teardown, run } from '../lib/airlock.mjs';
import { itServesTheToolSurface, checkAudit } from '../lib/checks.mjs';

describe('TypeScript SDK over stdio', () => {
  let state;
  let client;
  let transport;
  let stderr = '';

  before(async () => {
    requireBuilt();
    state = await tempState('stdio');
    transport = new StdioClientTransport({ command: AIRLOCK, args: ['serve', '--state', state], cwd: ROOT, stderr: 'pipe' });
    transport.stderr?.on('data', (b) => { stderr += b; });
    client = new Client(CLIENT_INFO);
    await client.connect(transport);
  });

  after(() => teardown({ clients: [client], states: [state] }));

  it('initializes with the demo server and the tools capability', () => {
    assert.equal(client.getServerVersion()?.name, 'airlock-demo');
    assert.ok(client.getServerCapabilities()?.tools, 'tools capability');
  });

  itServesTheToolSurface(() => client, { untrusted: true });

  // `make build` embeds the minimal trampoline (internal/execution/sandbox/
  // trampolinebin): the server's spare runs it from a sealed memfd, not the
  // airlock binary again.
  it('starts its spare sandbox trampoline from the embedded binary', async () => {
    const server = transport.pid;
    let seen = [];
    for (let i = 0; i < 100; i++) {
      seen = await trampolinesOf(server);
      if (seen.length > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(seen.length > 0, `no trampoline child of ${server}\n--- airlock stderr ---\n${stderr}`);
    for (const exe of seen) assert.match(exe, /^\/memfd:airlock-trampoline/);
  });

  // doctor has few files open, so its memfd could land on a descriptor
  // the trampoline is started with (it did: fd 5, /dev/null there, and
  // the self-test quietly fell back to the server binary).
  it('doctor self-tests the embedded trampoline', async () => {
    const r = await run(AIRLOCK, ['doctor', '--state', state]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^self_test\s+active\s.*\(embedded trampoline\)$/m, r.stdout);
  });

  it('leaves a verifiable audit trail that shows the calls', async () => {
    await client.close();
    client = null;
    await checkAudit(state, [
      { transport: 'stdio', tool: 'read_pool_file', outcome: 'ok', principal: 'local' },
      { transport: 'stdio', tool: 'read_pool_file', violation: 'PATH_OUTSIDE_POOLS' },
      { transport: 'stdio', tool: 'read_pool_file', violation: 'UNKNOWN_POOL_ID' },
      { transport: 'stdio', tool: 'list_pools', violation: 'INVALID_ARGUMENTS' },
    ]).catch((e) => { e.message += `\n--- airlock stderr ---\n${stderr}`; throw e; });
  });
});

// trampolinesOf lists what the sandbox trampolines started by pid execute
// (/proc/N/exe).
async function trampolinesOf(pid) {
  const out = [];
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const status = await readFile(`/proc/${d}/status`, 'utf8');
      const cmdline = await readFile(`/proc/${d}/cmdline`, 'utf8');
      if (status.match(/^PPid:\s+(\d+)$/m)?.[1] === String(pid) && cmdline.split('\0')[1] === '__airlock-sandbox-trampoline') {
        out.push(await readlink(`/proc/${d}/exe`));
      }
    } catch { /* the process ended meanwhile */ }
  }
  return out;
}
