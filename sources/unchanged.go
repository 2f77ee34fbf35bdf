package sources

import "github.com/airlock-dev/airlock/internal/kit/violation"

// VerifyUnchanged checks, once a sandboxed pipeline has ended, that every
// file of the pool it was given is still the file [Context.VerifyPool]
// checked before the run (rep): the same version — device, inode, size,
// mtime and ctime of the file the name opens now — and still the bytes
// of its manifest digest (hashed again). A pool's files are bound into the
// sandbox live, so a writer outside could change one between the check and
// the pipeline's read; what the run read is vouched for only if nothing
// changed in between. An in-place rewrite, even one restored to the old
// bytes, moves ctime, which no writer can set back; a file renamed away
// and back is re-stamped too (its ctime moves on rename). A change is
// INTEGRITY_FAILURE naming the first changed file, and fails the pool
// (issue 26 item 9; TestVerifyUnchanged, and
// server TestPipelinePoolChangedDuringRunIsWithheld end to end).
//
// Limit: a change and its undoing both within one tick of the file
// system's timestamp clock, before the first check hashed the file, keep
// the version; without inode and ctime (outside Linux) only the digest is
// compared.
func (c *Context) VerifyUnchanged(rep VerifyReport) error {
	p, err := c.resolve(rep.PoolID)
	if err != nil {
		c.finish(OpVerify, rep.PoolID, "", err, markNone)
		return err
	}
	maxBytes, closed := c.reg.opts.MaxFileBytes, c.reg.closed.Load()
	for _, e := range p.manifest.entries {
		if closed || !p.unchanged(e, rep.versions, maxBytes) {
			err := violation.New(violation.IntegrityFailure, "pool %s changed while the pipeline ran: %s is not the file verified before the run; its outputs are withheld",
				short(rep.PoolID), cut(e.Path))
			c.finish(OpVerify, rep.PoolID, e.Path, err, markFailed)
			return err
		}
	}
	c.finish(OpVerify, rep.PoolID, "", nil, markVerified)
	return nil
}

// unchanged reports whether manifest entry e still opens as the version in
// before and still hashes to its digest.
func (p *pool) unchanged(e Entry, before map[string]versionKey, maxBytes int64) bool {
	sum, _, info, err := hashOpen(p.root, e.Path, maxBytes)
	if err != nil || sum != e.SHA256 {
		return false
	}
	v, ok := versionOf(p, e.Path, info)
	was, had := before[e.Path]
	return ok == had && (!ok || v == was)
}
