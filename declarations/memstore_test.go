package declarations

import "testing"

func TestMemoryStoreConformance(t *testing.T) {
	StoreConformance(t, func(*testing.T) Store { return NewMemoryStore() })
}
