// A node:test reporter that prints one closing line for the whole e2e run:
//   e2e: N passed, N failed, N skipped
// It counts tests, not suites (a suite whose hook fails reports its tests as
// failed). Used next to the spec reporter by `make test-e2e`.
export default async function* summary(source) {
  const start = Date.now();
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const failures = [];
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { data } = event;
    if (data.details?.type === 'suite') continue;
    if (data.skip || data.todo) skipped++;
    else if (event.type === 'test:pass') passed++;
    else {
      failed++;
      failures.push(`${data.file ? data.file.split('/').pop() + ': ' : ''}${data.name}`);
    }
  }
  const secs = ((Date.now() - start) / 1000).toFixed(1);
  yield `\ne2e summary (${secs}s)${failures.length ? '; failed:\n' + failures.map((f) => `  - ${f}`).join('\n') : ''}\n`;
  yield `e2e: ${passed} passed, ${failed} failed, ${skipped} skipped\n`;
}
