// Checks shared by the TypeScript SDK tests: each takes a connected MCP
// Client and asserts one behaviour of Airlock's tool surface.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { EXPECTED_TOOLS, textOf, auditVerify, auditRecords } from './airlock.mjs';

/** tools/list returns exactly Airlock's tools, each with a closed input schema. */
export async function checkToolList(client) {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort(), 'tool names');
  for (const t of tools) {
    assert.equal(typeof t.description, 'string', `${t.name}: description`);
    assert.ok(t.description.length > 0, `${t.name}: description is empty`);
    assert.equal(t.inputSchema?.type, 'object', `${t.name}: inputSchema.type`);
    assert.equal(t.inputSchema.additionalProperties, false, `${t.name}: inputSchema.additionalProperties must be false`);
  }
  const read = tools.find((t) => t.name === 'read_pool_file');
  assert.deepEqual([...(read.inputSchema.required ?? [])].sort(), ['path', 'pool'], 'read_pool_file requires pool and path');
  return tools;
}

/** Reads a trusted file and checks its content comes back unfenced. */
export async function checkReadTrusted(client, { pool = 'sales', path = 'regions.csv', expect = 'region,quarter,units,revenue_eur' } = {}) {
  const res = await client.callTool({ name: 'read_pool_file', arguments: { pool, path } });
  const text = textOf(res);
  assert.notEqual(res.isError, true, `read ${pool}/${path} failed: ${text}`);
  assert.ok(text.includes(expect), `read ${pool}/${path}: expected ${JSON.stringify(expect)} in ${JSON.stringify(text.slice(0, 300))}`);
  assert.ok(!text.includes('UNTRUSTED_EXTERNAL_CONTENT'), 'trusted content must not be fenced');
  return res;
}

/** Reads an untrusted file and checks the content is inside the fence markers. */
export async function checkReadUntrusted(client, { pool = 'web-notes', path = '2026/competitor-notes.md', expect = 'competitor' } = {}) {
  const res = await client.callTool({ name: 'read_pool_file', arguments: { pool, path } });
  const text = textOf(res);
  assert.notEqual(res.isError, true, `read ${pool}/${path} failed: ${text}`);
  const open = text.match(/<<<UNTRUSTED_EXTERNAL_CONTENT nonce=([0-9a-f]+)[^>]*>>>/);
  assert.ok(open, `no opening UNTRUSTED_EXTERNAL_CONTENT marker in ${JSON.stringify(text.slice(0, 400))}`);
  const closing = `<<<END_UNTRUSTED_EXTERNAL_CONTENT nonce=${open[1]}>>>`;
  const start = open.index + open[0].length;
  const end = text.indexOf(closing, start);
  assert.ok(end > start, `no closing marker with the opening marker's nonce (${open[1]})`);
  assert.ok(text.slice(start, end).includes(expect), `the file's content (${JSON.stringify(expect)}) is not inside the fence`);
  return res;
}

/** Calls a tool that must fail with an isError result whose text starts with the violation code. */
export async function expectViolation(client, name, args, code) {
  const res = await client.callTool({ name, arguments: args });
  const text = textOf(res);
  assert.equal(res.isError, true, `${name}(${JSON.stringify(args)}) should fail with ${code}, got: ${text.slice(0, 300)}`);
  assert.ok(text.startsWith(`${code}:`), `${name}(${JSON.stringify(args)}): expected "${code}: ..." got ${JSON.stringify(text.slice(0, 300))}`);
  return res;
}

export const checkPathOutside = (client, pool = 'sales') =>
  expectViolation(client, 'read_pool_file', { pool, path: '../../etc/passwd' }, 'PATH_OUTSIDE_POOLS');

export const checkUnknownPool = (client) =>
  expectViolation(client, 'read_pool_file', { pool: 'no-such-pool', path: 'regions.csv' }, 'UNKNOWN_POOL_ID');

/** An argument the schema does not declare is refused (additionalProperties: false, enforced by the server). */
export const checkUnknownArgument = (client) =>
  expectViolation(client, 'list_pools', { surprise: true }, 'INVALID_ARGUMENTS');

/**
 * After the server is gone: the audit chain verifies and holds the records
 * `want` describes (each a partial record that some record must match).
 */
export async function checkAudit(state, want) {
  const v = await auditVerify(state);
  assert.equal(v.code, 0, `airlock audit verify exited ${v.code}:\n${v.stdout}${v.stderr}`);
  assert.match(v.stdout, /audit trail OK/);
  const recs = await auditRecords(state);
  assert.ok(recs.length > 0, 'audit tail printed no records');
  for (const w of want) {
    const hit = recs.find((r) => Object.entries(w).every(([k, v]) => (v instanceof RegExp ? v.test(String(r[k])) : r[k] === v)));
    assert.ok(hit, `no audit record matches ${JSON.stringify(w, (k, v) => (v instanceof RegExp ? String(v) : v))}; records:\n` +
      recs.map((r) => `${r.seq} ${r.transport} ${r.principal} ${r.tool} ${r.capability} ${r.decision} ${r.outcome} ${r.violation}`).join('\n'));
  }
  return recs;
}

/**
 * Registers, in the enclosing describe, the tool-surface tests every
 * transport's suite runs, in this order: tools/list, a trusted read, (with
 * untrusted) a read inside the fence, ../ refused, and (unless unknowns is
 * false) an unknown pool and an undeclared argument refused. client()
 * returns the suite's client when a test runs (before() connects it).
 */
export function itServesTheToolSurface(client, { untrusted = false, unknowns = true } = {}) {
  it('lists exactly the Airlock tools, each with a closed input schema', () => checkToolList(client()));
  it('reads sales/regions.csv', () => checkReadTrusted(client()));
  if (untrusted) it('reads an untrusted file inside the fence', () => checkReadUntrusted(client()));
  it('refuses ../ with PATH_OUTSIDE_POOLS', () => checkPathOutside(client()));
  if (!unknowns) return;
  it('refuses an unknown pool with UNKNOWN_POOL_ID', () => checkUnknownPool(client()));
  it('refuses an undeclared argument with INVALID_ARGUMENTS', () => checkUnknownArgument(client()));
}
