package sources

import "github.com/airlock-dev/airlock/internal/kit/violation"

// OpVerify names a whole-pool integrity check in AccessRecord.Op.
const OpVerify = "verify"

// VerifyPool re-hashes every file of a bound pool against its manifest, as
// the run_pipeline guard does before a pipeline may read the pool: the
// sandbox lets the pipeline read the directory directly, so the bytes are
// checked here, before, rather than per read. The check is recorded in the
// access log, counts the pool as used and sets its integrity state. A
// mismatch is INTEGRITY_FAILURE naming the first bad file.
//
// The report keeps the version of each file it hashed: once the pipeline
// has ended, [Context.VerifyUnchanged] holds the files to it, so a file
// changed after this check and before (or while) the pipeline read it
// withholds the run's outputs.
func (c *Context) VerifyPool(poolID string) (VerifyReport, error) {
	p, err := c.resolve(poolID)
	if err != nil {
		c.finish(OpVerify, poolID, "", err, markNone)
		return VerifyReport{}, err
	}
	rep := p.verify(c.reg.opts.MaxFileBytes, c.reg.closed.Load())
	if !rep.OK {
		first := rep.Problems[0]
		err = violation.New(violation.IntegrityFailure, "pool %s failed verification: %s is %s", short(poolID), cut(first.Path), first.Kind)
		c.finish(OpVerify, poolID, "", err, markFailed)
		return rep, err
	}
	c.finish(OpVerify, poolID, "", nil, markVerified)
	return rep, nil
}
