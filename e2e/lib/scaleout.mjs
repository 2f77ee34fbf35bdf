// Helpers for the scale-out e2e test: a PostgreSQL database on the test
// cluster (scripts/pg-test-cluster, started by the Makefile or here) and
// HAProxy from Debian's package in front of several airlock instances.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT, run, freePort } from './airlock.mjs';

const SCRIPT = path.join(ROOT, 'scripts', 'pg-test-cluster');

/** The HAProxy configuration this test shares with server/scaleout_bench_test.go. */
const HAPROXY_CFG = path.join(ROOT, 'e2e', 'testdata', 'haproxy.cfg');

/** Fills the @MAXCONN@, @PORT@ and @SERVERS@ of the shared configuration. */
function haproxyConfig(template, { maxconn, port, servers }) {
  return template.replaceAll('@MAXCONN@', String(maxconn)).replaceAll('@PORT@', String(port)).replaceAll('@SERVERS@', servers);
}

/** psql from the newest /usr/lib/postgresql/N/bin, or null. */
function psqlPath() {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const versions = readdirSync(base).filter((v) => existsSync(path.join(base, v, 'bin', 'psql'))).sort((a, b) => Number(a) - Number(b));
  return versions.length ? path.join(base, versions.at(-1), 'bin', 'psql') : null;
}

/**
 * What the scale-out test needs and is missing: PostgreSQL's binaries and
 * HAProxy. Under CI nothing may be missing (the test fails instead).
 */
export function missingParts() {
  const missing = [];
  if (!psqlPath()) missing.push('postgresql (make pg-deps)');
  if (!existsSync('/usr/sbin/haproxy')) missing.push('haproxy (make lb-deps)');
  return missing;
}

/**
 * A superuser DSN on a running cluster: $AIRLOCK_TEST_PG (the Makefile's),
 * else a cluster started here; stop() stops what was started here.
 */
export async function pgCluster() {
  if (process.env.AIRLOCK_TEST_PG) return { dsn: process.env.AIRLOCK_TEST_PG, stop: async () => {} };
  const dir = await mkdtemp(path.join(tmpdir(), 'airlock-pg-'));
  const res = await run(SCRIPT, ['start', dir]);
  if (res.code !== 0) throw new Error(`pg-test-cluster start: ${res.stderr}`);
  return { dsn: res.stdout.trim(), stop: async () => { await run(SCRIPT, ['stop', dir]); } };
}

/** Creates a fresh database on the cluster and returns its DSN. */
export async function createDatabase(adminDSN) {
  const name = 'e2e_' + randomBytes(6).toString('hex');
  const res = await run(psqlPath(), [adminDSN, '-v', 'ON_ERROR_STOP=1', '-qc', `CREATE DATABASE ${name}`]);
  if (res.code !== 0) throw new Error(`CREATE DATABASE: ${res.stderr}`);
  // Not new URL(): a DSN for a unix socket has an empty host, which the
  // WHATWG parser refuses.
  return adminDSN.replace(/^(postgres(?:ql)?:\/\/[^/?]*)(\/[^?]*)?/, `$1/${name}`);
}

/** Runs SQL on the database dsn names; resolves with psql's stdout. */
export async function psql(dsn, sql) {
  const res = await run(psqlPath(), [dsn, '-v', 'ON_ERROR_STOP=1', '-qAtc', sql]);
  if (res.code !== 0) throw new Error(`psql: ${res.stderr}`);
  return res.stdout;
}

/**
 * Starts HAProxy in the foreground on 127.0.0.1:port, balancing HTTP
 * requests round-robin over backends (base URLs). Every request is
 * balanced on its own (http-server-close), so one client's calls spread.
 */
export async function startHAProxy(backends, { port } = {}) {
  port ??= await freePort();
  const dir = await mkdtemp(path.join(tmpdir(), 'airlock-haproxy-'));
  const cfg = path.join(dir, 'haproxy.cfg');
  const servers = backends.map((b, i) => `  server airlock${i} ${new URL(b).host} check inter 200ms`).join('\n');
  await writeFile(cfg, haproxyConfig(await readFile(HAPROXY_CFG, 'utf8'), { maxconn: 2048, port, servers }));
  const proc = spawn('/usr/sbin/haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (b) => { log += b; });
  proc.stderr.on('data', (b) => { log += b; });
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  // Ready once it accepts connections.
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`haproxy exited: ${log}`);
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`haproxy not listening: ${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url: `http://127.0.0.1:${port}`,
    log: () => log,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
