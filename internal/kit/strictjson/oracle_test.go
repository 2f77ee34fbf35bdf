package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// tokenWalk is the implementation Check replaced (a walk over
// encoding/json's tokens), kept as the oracle its verdicts must match.
func tokenWalk(data []byte, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkTokens(dec, 0, maxDepth); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailing
	}
	return nil
}

func walkTokens(dec *json.Decoder, depth, maxDepth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: deeper than %d levels", ErrTooDeep, maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	switch tok {
	case json.Delim('{'):
		var seen []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrSyntax, err)
			}
			key, _ := k.(string)
			for _, k := range seen {
				if strings.EqualFold(k, key) {
					return fmt.Errorf("%w %q", ErrDuplicateKey, key)
				}
			}
			seen = append(seen, key)
			if err := walkTokens(dec, depth+1, maxDepth); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if err := walkTokens(dec, depth+1, maxDepth); err != nil {
				return err
			}
		}
	case nil, true, false:
		return nil
	default:
		if n, ok := tok.(json.Number); ok {
			if _, err := n.Float64(); errors.Is(err, strconv.ErrRange) {
				return fmt.Errorf("%w: %s", ErrNumberRange, n)
			}
		}
		return nil
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return nil
}

// verdict is an error's kind, and for a duplicate the key's text.
func verdict(err error) string {
	for _, k := range []error{ErrDuplicateKey, ErrTooDeep, ErrTrailing, ErrSyntax, ErrNumberRange} {
		if errors.Is(err, k) {
			if k == ErrDuplicateKey {
				return err.Error()
			}
			return k.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return "ok"
}

var agreeSeeds = []string{
	`{"a":[1,2,{"b":null}]}`, `{"a":1,"a":1}`, `{"a":1,"\u0061":2}`, "{\"\xff\":1,\"\xfe\":2}",
	`[1,]`, `{"a":1,}`, `{,}`, `[,1]`, `{"a" 1}`, `{"a":}`, `{1:2}`, `-`, `01`, `1.`, `.5`, `1e`, `1e+`, `-0.0e-0`,
	`"\u12"`, `"\x"`, "\"\x01\"", `tru`, `truex`, `[true false]`, `{"a":1}{}`, `1 2`, `  `, ``, `[`, `{`, `{"a"`,
	`[[[[1]]]]`, `{"a":{"b":{"c":{}}}}`, `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k3":3}`,
	`{"a":[1,{"b":2,"b":3}],"c":[[[[[[1]]]]]]}`, "[1\x00]", `"\ud800"`, `{"\ud800":1,"\ufffd":2}`,
	// Numbers past a float64: refused; small ones read as 0 are not.
	`1e309`, `[1e308,-1e309]`, `{"a":1e309,"a":1}`, `{"a":1,"a":1e309}`, `1e-400`, `1.7976931348623157e308`,
	`1.7976931348623159e308`, "1" + strings.Repeat("0", 308), "1" + strings.Repeat("0", 309), `1e309x`, `[1e99999999999999999999]`,
}

func TestCheckAgreesWithTokenWalk(t *testing.T) {
	for _, in := range agreeSeeds {
		for _, depth := range []int{0, 1, 2, 4, 16} {
			if got, want := verdict(Check([]byte(in), depth)), verdict(tokenWalk([]byte(in), depth)); got != want {
				t.Errorf("Check(%q, %d) = %s, token walk says %s", in, depth, got, want)
			}
		}
	}
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if got, want := verdict(Check([]byte(deep), 64)), verdict(tokenWalk([]byte(deep), 64)); got != want {
		t.Errorf("deep: %s vs %s", got, want)
	}
}

// FuzzCheckAgreesWithTokenWalk: for any bytes and depth bound, Check's
// verdict (ok, syntax, too deep, trailing, or which key is duplicated) is
// the token walk's.
func FuzzCheckAgreesWithTokenWalk(f *testing.F) {
	for _, s := range agreeSeeds {
		f.Add([]byte(s), uint8(4))
	}
	f.Fuzz(func(t *testing.T, in []byte, depth uint8) {
		d := int(depth % 24)
		if got, want := verdict(Check(in, d)), verdict(tokenWalk(in, d)); got != want {
			t.Fatalf("Check(%q, %d) = %s, token walk says %s", in, d, got, want)
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_pool_file","arguments":{"pool":"sales","path":"regions.csv","offset":0,"limit":65536},"_meta":{"progressToken":"p-7"}}}`)
	for _, impl := range []struct {
		name string
		f    func([]byte, int) error
	}{{"scanner", Check}, {"tokenWalk", tokenWalk}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if err := impl.f(msg, 64); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
