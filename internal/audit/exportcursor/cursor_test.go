package exportcursor_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/exportcursor"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: ErrMalformed
	}{
		{"next_seq 1\n", 1},
		{"next_seq 9223372036854775807\n", math.MaxInt64},
		{"next_seq 42", 0},                    // torn: no newline
		{"next_seq \n", 0},                    // no number
		{"next_seq 0\n", 0},                   // seqs start at 1
		{"next_seq 007\n", 0},                 // leading zeros
		{"next_seq -3\n", 0},                  // sign
		{"next_seq +3\n", 0},                  // sign
		{"next_seq  3\n", 0},                  // extra space
		{"next_seq 3\n\n", 0},                 // second line
		{"next_seq 9223372036854775808\n", 0}, // past int64
		{"NEXT_SEQ 3\n", 0},
		{"", 0},
		{"3\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := exportcursor.Parse([]byte(tt.in))
			if tt.want == 0 {
				if !errors.Is(err, exportcursor.ErrMalformed) {
					t.Fatalf("Parse(%q) = %d, %v; want ErrMalformed", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Parse(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "siem.cursor")
	if _, found, err := exportcursor.Load(path); found || err != nil {
		t.Fatalf("no file: found=%v err=%v", found, err)
	}
	for _, n := range []int64{1, 17, 123456} {
		if err := exportcursor.Save(path, n); err != nil {
			t.Fatal(err)
		}
		got, found, err := exportcursor.Load(path)
		if err != nil || !found || got != n {
			t.Fatalf("Load after Save(%d) = %d, %v, %v", n, got, found, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	if err := exportcursor.Save(path, 0); !errors.Is(err, exportcursor.ErrMalformed) {
		t.Fatalf("Save(0) = %v", err)
	}
	if err := os.WriteFile(path, []byte("next_seq 12"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := exportcursor.Load(path); !errors.Is(err, exportcursor.ErrMalformed) {
		t.Fatalf("Load(torn) = %v, want ErrMalformed", err)
	}
}

// FuzzParse: whatever the file holds, Parse returns a seq ≥ 1 that
// formats back to exactly the input, or ErrMalformed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"next_seq 1\n", "next_seq 9223372036854775807\n", "next_seq 0\n", "next_seq 01\n", "", "next_seq 99999999999999999999\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := exportcursor.Parse(b)
		if err != nil {
			if !errors.Is(err, exportcursor.ErrMalformed) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if n < 1 || string(exportcursor.Format(n)) != string(b) {
			t.Fatalf("Parse(%q) = %d, which formats as %q", b, n, exportcursor.Format(n))
		}
	})
}
