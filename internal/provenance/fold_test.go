package provenance

import "testing"

func TestSkeleton(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"case", "US13ABC", "us13abc"},
		{"cyrillic a e o c p x", "\u0430\u0435\u043e\u0441\u0440\u0445", "aeocpx"},
		{"cyrillic capitals", "\u0410\u0412\u0415\u041d\u041a\u041c\u041e\u0420\u0421\u0422\u0425", "abehkmopctx"},
		{"greek", "\u03bf\u039f\u03b1\u0391\u03bd\u03c1", "ooaavp"},
		{"fullwidth", "\uff35\uff33\uff11\uff13\uff20\uff0e", "us13@."},
		{"mathematical bold", "\U0001d414\U0001d412", "us"},
		{"zero-width and joiners", "U\u200bS\u200c1\u200d3\ufeff\u2060", "us13"},
		{"soft hyphen and bidi", "U\u00adS\u202e13\u202c", "us13"},
		{"tag characters", "US\U000E0031\U000E003313", "us13"},
		{"combining marks", "U\u0301S\u033513", "us13"},
		{"percent", "%55%53%31%33", "us13"},
		{"double percent", "%2555S13", "us13"},
		{"html references", "&#85;&#x53;13&amp;", "us13&"},
		{"arabic-indic digits", "\u0661\u0663", "13"},
		{"devanagari digits", "\u0967\u0969", "13"},
		{"ideographic full stop", "google\u3002com", "google.com"},
		{"defanged", "hxxps://www[.]x(dot)com jay[at]x.com", "https://www.x.com jay@x.com"},
		{"nbsp and tabs", "a\u00a0b\tc", "a b c"},
		{"plain", "hello", "hello"},
	} {
		if got := Skeleton(c.in); got != c.want {
			t.Errorf("%s: Skeleton(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, c := range []struct {
		kind     Kind
		in, want string
		ok       bool
	}{
		{KindIBAN, "gb29 nwbk-6016 1331 9268 19", taskIBAN, true},
		{KindIBAN, "GB29", "GB29", false},
		{KindIBAN, "GB29 NWBK 6016 1331 9268 1\u0417", "GB29NWBK6016133192681\u0417", false}, // Cyrillic Ze stays
		{KindEmail, " Jay@Google.COM ", "jay@google.com", true},
		{KindEmail, "j.ay+x@google.com", "j.ay+x@google.com", true},
		{KindEmail, "not-an-address", "not-an-address", false},
		{KindURL, "HTTPS://WWW.Example.COM.:443/a/%7Euser/%2F/", "www.example.com/a/~user/%2f", true},
		{KindURL, "http://example.com:8080/?q=1#frag", "example.com:8080?q=1", true},
		{KindURL, "www.my-website-234.com/random", "www.my-website-234.com/random", true},
		{KindHost, "Example.COM.", "example.com", true},
		{KindHost, "p\u0430ypal.com", "p\u0430ypal.com", true}, // exact keys keep look-alikes apart
		{KindPhone, "+44 (20) 7946-0958", "+442079460958", true},
		{KindPhone, "123", "123", false},
		{KindAmount, "$1,000.50", "1000.5", true},
		{KindAmount, "1.000,50 EUR", "1000.5", true},
		{KindAmount, "100.00", "100", true},
		{KindAmount, "1.000", "1000", true},
		{KindAmount, "1.2.3", "", false},
		{KindDate, "2024-03-15T10:00:00Z", "2024-03-15", true},
		{KindDate, "15/03/2024", "2024-03-15", true},
		{KindDate, "March 15, 2024", "2024-03-15", true},
		{KindDate, "15th of March 2024", "2024-03-15", true},
		{KindDate, "32/13/2024", "", false},
		{KindHandle, "#General", "#general", true},
		{KindHandle, "general", "general", false},
		{KindIdentifier, " INV-2024\t0042 ", "inv-2024 0042", true},
	} {
		got, ok := Normalize(c.kind, c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("Normalize(%s, %q) = %q, %v; want %q, %v", c.kind, c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestReadings(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"1,000.50", []string{"1000.5"}},
		{"1.000,50", []string{"1000.5"}},
		{"1'000.50", []string{"1000.5"}},
		{"1,000,000", []string{"1000000"}},
		{"1,000", []string{"1000", "1"}},
		{"12,5", []string{"12.5"}},
		{"0.50", []string{"0.5"}},
		{"007", []string{"7"}},
		{"1.2.3", nil},
		{"1,00,000.50", nil},
	} {
		var got []string
		for _, a := range readings(c.in, false) {
			got = append(got, a.key)
		}
		if len(got) != len(c.want) || len(got) > 0 && got[0] != c.want[0] {
			t.Errorf("readings(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestAmountSignificance(t *testing.T) {
	got := amountsIn(Skeleton("Invite 100 people, pay $100 or 250.00 or 1,000 or 75 EUR, room 12, INV2024 2024"), 100)
	want := []string{"100", "250", "1000", "75", "2024"}
	if len(got) != len(want) {
		t.Fatalf("amountsIn = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("amountsIn = %v, want %v", got, want)
		}
	}
}
