package config

import (
	"fmt"

	"github.com/airlock-dev/airlock/sources"
)

// checkReaders validates the readers list of a pool or an upstream at
// path (see sources.CheckReader for what an entry may hold). An empty
// list is refused: written out it would read as "nobody", but a list the
// operator left empty by mistake should not silently make content public
// or unsendable either way.
func (c *Config) checkReaders(path string, rs []string) error {
	switch {
	case rs != nil && len(rs) == 0:
		return c.at(path, fmt.Errorf("readers is empty (omit it for public content): %w", ErrInvalid))
	case len(rs) > sources.MaxReaders:
		return c.at(path, fmt.Errorf("%d readers, at most %d: %w", len(rs), sources.MaxReaders, ErrInvalid))
	}
	for j, r := range rs {
		if err := sources.CheckReader(r); err != nil {
			return c.at(fmt.Sprintf("%s[%d]", path, j), fmt.Errorf("%w: %w", err, ErrInvalid))
		}
	}
	return nil
}
