// Package workspace gives each pipeline run its own directory and turns what
// the run wrote into declared, hashed, atomically published outputs.
//
// # Invariant
//
// Only declared outputs leave a run. [Create] fixes the set of output names
// up front (canonical relative paths, checked by [ValidOutputName]); the
// sandbox lets the pipeline write only in its /out and /tmp (a per-run
// tmpfs). [Workspace.CollectFrom] then reads /out back through the
// [os.Root] the sandbox hands over and:
//
//   - publishes each declared output that is a regular file reached through
//     real directories, copying it from the very descriptor it hashes, into
//     a staging directory that is renamed into place in one step, so the
//     published directory is either complete or absent;
//   - refuses, and records as a WRITE_ATTEMPT violation, everything else:
//     undeclared files and directories, symlinks (declared or not; a link
//     the pipeline planted to /etc/shadow is never opened), hard links,
//     FIFOs, sockets and devices; these are discarded with out/;
//   - computes a deterministic snapshot hash over the sorted (name, SHA-256)
//     pairs ([SnapshotHash]).
//
// The layout under baseDir/runID is out/, tmp/ (when temp files are
// allowed) and published/ (after collection; root-owned copies).
// run_pipeline's pipelines never write under baseDir — out/ and tmp/ stay
// empty, and only the package's tests write in them — so only published/
// remains.
//
// # Limits, honestly
//
//   - CollectFrom must run after the pipeline has ended (the sandbox's Run has
//     returned, so its PID namespace is gone); it also verifies that the
//     file it opened is the one it inspected (device and inode), so a swap
//     during collection is refused, not followed.
//   - A declared output that is hard-linked (link count > 1) is refused,
//     even when both names are declared outputs.
//   - Only the server enters baseDir: a pipeline writes to its run's tmpfs
//     and never sees a host path, so baseDir may lie in a private (0700)
//     state directory (issue 24 item 11).
//   - Durability is one flush: CollectFrom writes the copies, renames
//     published/ and writes the manifest without an fsync each, then makes
//     all of it durable with one syncfs(2) of the run directory's
//     filesystem before it returns — so before the store can name the
//     output pool (TestCollectSyncsOnce). A power loss before that flush
//     may leave published/ with torn contents, which no record names (the
//     pool is registered after CollectFrom returns, and its manifest would
//     refuse the bytes); the next start's recovery removes the run's
//     directory when its mark reached the disk (package runmark). syncfs
//     flushes the whole filesystem, so on a disk busy with other writers
//     it can take longer than a few targeted fsyncs.
//   - Output sizes are bounded by the sandbox's disk quota and RLIMIT_FSIZE,
//     not here.
package workspace
