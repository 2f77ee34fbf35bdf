package declarationstest

import (
	"testing"

	"github.com/airlock-dev/airlock/declarations"
)

func TestMemoryStoreConformance(t *testing.T) {
	StoreConformance(t, func(*testing.T) declarations.Store { return NewMemoryStore() })
}
