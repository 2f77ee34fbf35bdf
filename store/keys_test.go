package store_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/store"
)

func TestKeyPersistsAndDiffersByName(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, nil)
	red, err := db.Key(ctx, "redaction")
	if err != nil {
		t.Fatal(err)
	}
	att, err := db.Key(ctx, "attribution")
	if err != nil {
		t.Fatal(err)
	}
	if len(red) != store.KeySize || len(att) != store.KeySize {
		t.Fatalf("key sizes %d, %d", len(red), len(att))
	}
	if bytes.Equal(red, att) || bytes.Equal(red, make([]byte, store.KeySize)) {
		t.Fatal("keys not random and distinct")
	}
	red[0] ^= 0xff // the caller's copy; must not reach the store's cache
	again, _ := db.Key(ctx, "redaction")
	if bytes.Equal(again, red) {
		t.Fatal("Key handed out its cached slice")
	}
	red[0] ^= 0xff
	db.Close()

	db2 := openPath(t, path)
	if k, err := db2.Key(ctx, "redaction"); err != nil || !bytes.Equal(k, red) {
		t.Fatalf("after reopen: %x, %v; want %x", k, err, red)
	}
	if _, err := db2.Key(ctx, ""); err == nil {
		t.Fatal("empty key name accepted")
	}
}

// TestKeyRace: many goroutines on two handles ask for a new key at once;
// all must get the same one.
func TestKeyRace(t *testing.T) {
	ctx := context.Background()
	a, path := openTemp(t, nil)
	b := openPath(t, path)
	const n = 32
	keys := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		db := a
		if i%2 == 1 {
			db = b
		}
		wg.Go(func() {
			k, err := db.Key(ctx, "hmac")
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for i := range keys {
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("goroutine %d got %x, goroutine 0 got %x", i, keys[i], keys[0])
		}
	}
}

func TestKeyCorrupt(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, nil)
	if _, err := store.RawOpen(t, path).Exec(`INSERT INTO keys (name, key_hex, created_at) VALUES ('short', 'abcd', 'x')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Key(ctx, "short"); err == nil {
		t.Fatal("a 2-byte key was returned")
	}
}
