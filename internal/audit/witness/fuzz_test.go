package witness

import (
	"bytes"
	"testing"
	"time"
)

// FuzzParse: any witness file parses without panic; every checkpoint it
// accepts re-marshals to exactly its line (one encoding per checkpoint),
// and flipping any byte of an accepted line makes it unacceptable.
func FuzzParse(f *testing.F) {
	good, _ := Checkpoint{Seq: 3, Head: h('c'), Time: time.Unix(1, 2).UTC(), Instance: "cli.x.1.a"}.Marshal(testKey)
	f.Add(good)
	f.Add(append(append([]byte{}, good...), good...))
	f.Add([]byte("airlock-witness-v1 seq=1 head=x kill=0 time=x instance=x mac=x\n"))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cps, _ := Parse(data, testKey)
		var again []byte
		for _, c := range cps {
			line, err := c.Marshal(testKey)
			if err != nil {
				t.Fatalf("accepted checkpoint does not marshal: %+v %v", c, err)
			}
			again = append(again, line...)
		}
		if !bytes.HasPrefix(data, again) {
			t.Fatalf("accepted lines differ from their encoding:\n%q\n%q", data, again)
		}
		if len(cps) > 0 {
			line := bytes.TrimSuffix(again[:bytes.IndexByte(again, '\n')+1], []byte("\n"))
			for i := range line {
				mut := bytes.Clone(line)
				mut[i] ^= 0x01
				if _, err := ParseLine(mut, testKey); err == nil {
					t.Fatalf("flipped byte %d accepted: %q", i, mut)
				}
			}
		}
	})
}
