// A real client reading a pool file whole, for internal/testkit/benchpeers'
// BenchmarkPeersPagedRead: the TypeScript SDK's stdio client starts
// `AIRLOCK serve --config CONFIG --state STATE`, then for every line "read"
// on stdin reads POOL/PATH page after page (read_pool_file with offset and
// limit PAGE until eof), decodes each page's blob, hashes the bytes and
// prints one JSON line: {"seconds", "bytes", "sha256"}. It stops at EOF on
// stdin. It first prints "ready PID", the server's process id. Usage: node pagedread.mjs AIRLOCK CONFIG STATE POOL PATH PAGE
import { createHash } from 'node:crypto';
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [airlock, config, state, pool, file, page] = process.argv.slice(2);
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
  let offset = 0;
  for (;;) {
    const res = await client.callTool({ name: 'read_pool_file', arguments: { pool, path: file, offset, limit: Number(page) } });
    if (res.isError) throw new Error(`page at ${offset}: ${JSON.stringify(res.content).slice(0, 400)}`);
    let n = 0;
    for (const c of res.content) {
      if (c.type === 'resource' && c.resource.blob !== undefined) {
        const b = Buffer.from(c.resource.blob, 'base64');
        hash.update(b);
        n += b.length;
      }
    }
    const meta = res.structuredContent;
    if (meta.next_offset !== offset + n) throw new Error(`page at ${offset}: ${n} bytes, next_offset ${meta.next_offset}`);
    offset = meta.next_offset;
    if (meta.eof) break;
  }
  return { seconds: (performance.now() - start) / 1000, bytes: offset, sha256: hash.digest('hex') };
}

process.stdout.write(`ready ${transport.pid}\n`); // the server's process id
for await (const line of readline.createInterface({ input: process.stdin })) {
  if (line.trim() !== 'read') break;
  process.stdout.write(JSON.stringify(await readWhole()) + '\n');
}
await client.close();
