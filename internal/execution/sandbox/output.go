package sandbox

// cappedBuffer captures at most limit bytes of a stream and drains the rest,
// so a pipeline flooding stdout never grows the server's memory and never
// blocks on a full pipe (TestHostileFlood). Past ceiling bytes in total it
// calls onFlood once, which kills the run with KillReason "output".
//
// Write is called by one os/exec copying goroutine; the fields are read
// only after cmd.Wait, which joins that goroutine.
type cappedBuffer struct {
	limit     int64
	ceiling   int64
	buf       []byte
	total     int64
	truncated bool
	flooded   bool
	onFlood   func()
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := c.limit - int64(len(c.buf)); room > 0 {
		n := min(int64(len(p)), room)
		c.buf = append(c.buf, p[:n]...)
		if n < int64(len(p)) {
			c.truncated = true
		}
	} else if len(p) > 0 {
		c.truncated = true
	}
	if c.total > c.ceiling && !c.flooded {
		c.flooded = true
		if c.onFlood != nil {
			c.onFlood()
		}
	}
	return len(p), nil
}
