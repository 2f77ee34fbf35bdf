// Package sources owns the source pools: directories of data files, each
// with an id, a trust level and a SHA-256 manifest, and the frozen
// ExecutionSourceContext (a [Context]) through which an agent reads them.
//
// # Invariants
//
// Each holds by construction and is pinned by the test named beside it.
//
//   - A Context's pools are fixed by [Registry.Bind]. No method adds, removes
//     or alters a bound pool (TestContextMethodSetIsFrozen, TestBindCopies).
//   - A pool id that is not configured is UNKNOWN_POOL_ID; one that is
//     configured but not bound is POOL_NOT_SELECTED (TestPoolResolution).
//   - A file name must be a canonical relative slash path: not empty, not
//     absolute, path.Clean(name) == name, no "." or ".." element, no NUL, no
//     backslash, at most [MaxPathLen] bytes. Anything else is
//     PATH_OUTSIDE_POOLS. Percent-encoding is not decoded. The same input
//     always gives the same code (TestReadHostilePaths, FuzzPath).
//   - Only names listed in the manifest are readable. A canonical name that
//     is not listed is INTEGRITY_FAILURE, decided before any disk access
//     (TestNotInManifestTouchesNoDisk).
//   - Every open goes through the pool's [os.Root]. A symlink (to a file or a
//     directory, directly or through a chain) that leaves the pool is
//     PATH_OUTSIDE_POOLS; one that stays inside works. The check happens in
//     the kernel-facing open, so swapping a link mid-read cannot win a race
//     (TestSymlinkSwapRace).
//   - The first Read of a file version hashes the whole file in the same
//     pass that captures the requested window, and returns nothing unless the
//     digest equals the manifest's. A mismatch marks the pool "failed" in that
//     Context for good; a match marks it "verified" unless it already failed
//     (TestIntegrityState).
//   - That pass also keeps the SHA-256 chaining value at each aligned
//     16 KiB chunk boundary of the bytes that matched (the hash's own state,
//     so the pass stays one pass), keyed by the file version (pool, name, device,
//     inode, size, mtime, ctime of the open descriptor). A later page of the
//     same version reads the chunks it overlaps once, into the buffer it
//     both hashes and serves, resumes the hash from the chain before them,
//     and returns nothing unless it reaches the kept chain (the manifest
//     digest for the last chunk): paging costs O(page), and a file rewritten in place
//     behind an unchanged stat is still INTEGRITY_FAILURE when a page covers
//     the change (TestChunkTamperSameStat, TestChunkShrunkSameStat,
//     TestPageHashesOnlyItsChunks, TestChainRoundTrip, FuzzChunkedRead,
//     FuzzChunkHasher).
//   - Every access, allowed or refused, is recorded; the log keeps the newest
//     [Options].MaxAccessLog records and the counts in [UsageSummary] stay
//     exact (TestAccessLogBounded).
//
// # Limits
//
//   - Reads are bounded: at most Options.MaxReadBytes per page (1 MiB) and
//     files of at most Options.MaxFileBytes (1 GiB, else LIMIT_EXCEEDED).
//     The first page of a file version costs one pass over the whole file;
//     later pages cost their own bytes plus at most two partial chunks.
//   - The chunk digests are bounded by Options.MaxDigestBytes (16 MiB,
//     least recently used dropped first); a file whose digests do not fit,
//     and every file outside Linux (no inode or ctime to key on), is verified
//     whole on every page, as before. Two first reads of one version racing
//     each other both hash the whole file.
//   - os.Root does not stop traversal of mount points, bind mounts or device
//     nodes placed inside the pool directory. Files are opened non-blocking
//     and anything but a regular file is refused before a byte is read, but
//     the open of a device node itself still happens. Keep pool directories
//     writable only by their operator.
//   - Manifests are sha256sum text. [BuildManifest] lists regular files only
//     and does not follow symlinks; a symlink is readable only if a manifest
//     lists it by hand. Names with a backslash may be listed (sha256sum
//     escapes them) but are never readable.
//   - Sizes in [PoolInfo] and [FileInfo] are those found when the registry
//     was opened; the size in a [ReadResult] is the one just hashed.
//   - MIME types come from the file extension only ([mime.TypeByExtension]),
//     falling back to text/plain or application/octet-stream.
//   - Pipelines that read pools inside the sandbox bypass this package's
//     access log and per-read hash checks; [Context.VerifyPool] re-hashes
//     the pool first and lists the manifest's names ([VerifyReport].Names),
//     which are the only files the sandbox binds, from the directory that
//     [Context.PoolPath] names.
//
// Refusals are *violation.Error values whose message is safe for the agent:
// it names the pool id but never a host path or an OS error, which ride in
// the private cause. Configuration and manifest problems are plain errors
// wrapping the sentinels in errors.go.
package sources
