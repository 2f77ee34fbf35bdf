// A real client reading a pool file whole, for internal/testkit/benchpeers'
// BenchmarkPeersPagedRead: the TypeScript SDK's stdio client starts
// `AIRLOCK serve --config CONFIG --state STATE`, then for every line "read"
// on stdin reads POOL/PATH page after page (read_pool_file with offset and
// limit PAGE until eof), decodes each page's blob, hashes the bytes and
// prints one JSON line: {"seconds", "bytes", "sha256"}. It stops at EOF on
// stdin. It first prints "ready PID", the server's process id. With
// INFLIGHT > 1 it keeps that many page requests in flight (the next offsets
// are offset + PAGE, checked against each answer's next_offset; a binary
// file's pages are whole), hashing the answers in order — a bulk reader's
// way to let the server commit several pages' audit records in one fsync.
// Usage: node pagedread.mjs AIRLOCK CONFIG STATE POOL PATH PAGE [INFLIGHT]
import { createHash } from 'node:crypto';
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [airlock, config, state, pool, file, page, inflightArg] = process.argv.slice(2);
const inflight = Math.max(1, Number(inflightArg ?? 1));
const transport = new StdioClientTransport({
  command: airlock,
  args: ['serve', '--config', config, '--state', state],
  stderr: 'ignore',
});
const client = new Client({ name: 'airlock-benchpeers', version: '1.0.0' });
await client.connect(transport);
await client.listTools(); // the output schemas the client checks results against

async function readWhole() {
  const start = performance.now();
  const hash = createHash('sha256');
  const limit = Number(page);
  const ask = (offset) => client.callTool({ name: 'read_pool_file', arguments: { pool, path: file, offset, limit } });
  const queue = []; // requests in flight, oldest first: [offset, promise]
  let offset = 0, next = 0, eof = false;
  for (;;) {
    while (!eof && queue.length < inflight) {
      queue.push([next, ask(next)]);
      next += limit;
    }
    if (queue.length === 0) break; // eof, and every answer in
    const [at, pending] = queue.shift();
    const res = await pending;
    if (res.isError) {
      if (at >= offset && eof) continue; // a request past the end, sent before the last page came back
      throw new Error(`page at ${at}: ${JSON.stringify(res.content).slice(0, 400)}`);
    }
    if (eof) continue;
    let n = 0;
    for (const c of res.content) {
      if (c.type === 'resource' && c.resource.blob !== undefined) {
        const b = Buffer.from(c.resource.blob, 'base64');
        hash.update(b);
        n += b.length;
      }
    }
    const meta = res.structuredContent;
    if (meta.offset !== offset || meta.next_offset !== offset + n) throw new Error(`page at ${offset}: ${n} bytes, offset ${meta.offset}, next_offset ${meta.next_offset}`);
    if (inflight > 1 && !meta.eof && n !== limit) throw new Error(`page at ${offset}: ${n} bytes, not ${limit}: pages in flight need whole pages`);
    offset = meta.next_offset;
    next = Math.max(next, offset);
    eof = meta.eof;
  }
  return { seconds: (performance.now() - start) / 1000, bytes: offset, sha256: hash.digest('hex') };
}

process.stdout.write(`ready ${transport.pid}\n`); // the server's process id
for await (const line of readline.createInterface({ input: process.stdin })) {
  if (line.trim() !== 'read') break;
  process.stdout.write(JSON.stringify(await readWhole()) + '\n');
}
await client.close();
