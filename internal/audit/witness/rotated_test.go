package witness

import (
	"context"
	"errors"
	"testing"
)

// rotatedChain is sliceChain with its records before first moved out, and
// an anchor that says so.
type rotatedChain struct{ deletedChain }

func (c rotatedChain) RotatedBefore(context.Context) (int64, error) { return c.first, nil }

// TestCheckRotated: a checkpoint of a record rotated out of the chain is
// not a rollback when the chain says it was rotated (its anchor, signed);
// records still in it are checked as before, and a chain that does not
// say so still reports the missing record.
func TestCheckRotated(t *testing.T) {
	full := sliceChain{h('1'), h('2'), h('3'), h('4'), h('5')}
	cps := []Checkpoint{cp(2, h('2'), false), cp(4, h('4'), false)}
	tests := []struct {
		name  string
		chain Chain
		cps   []Checkpoint
		want  error
	}{
		{"rotated before 3", rotatedChain{deletedChain{full, 3}}, cps, nil},
		{"rotated, a kept record rewritten", rotatedChain{deletedChain{full, 3}}, []Checkpoint{cp(2, h('2'), false), cp(4, h('x'), false)}, ErrRewritten},
		{"rotated, tail cut", rotatedChain{deletedChain{full[:3], 3}}, []Checkpoint{cp(2, h('2'), false), cp(4, h('4'), false)}, ErrRolledBack},
		{"deleted without saying so", deletedChain{full, 3}, cps, ErrRolledBack},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(context.Background(), tc.cps, tc.chain, false)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// deletedChain lost its records before first but has no anchor to say so.
type deletedChain struct {
	sliceChain
	first int64
}

func (c deletedChain) HashAt(ctx context.Context, seq int64) (string, bool, error) {
	if seq < c.first {
		return "", false, nil
	}
	return c.sliceChain.HashAt(ctx, seq)
}
