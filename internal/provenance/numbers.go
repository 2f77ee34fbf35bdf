package provenance

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Amounts and dates are compared by value, so "1,000.50", "1.000,50 EUR"
// and the JSON number 1000.5 are one amount, and "15/03/2024" and
// "March 15, 2024" one date. Folding cannot turn an amount into a
// different one, so a by-value match in a trusted source is exact.

const currency = `[$€£¥₹]|usd|eur|gbp|chf|jpy|cad|aud|inr|sek|nok|dkk|pln`

// numberRE finds numbers with their currency context in a folded text.
var numberRE = regexp.MustCompile(`(?:(` + currency + `) ?)?([0-9]{1,40}(?:[.,'][0-9]{1,40}){0,8})(?: ?(` +
	currency + `|dollars?|euros?|pounds?|francs?|bucks))?`)

// amount is one reading of a number: its key and whether it is
// significant enough to be matched (see doc.go).
type amount struct {
	key         string
	significant bool
}

// amountsIn returns the significant amounts of a folded text, at most
// limit. It scans digit runs by hand (the regular expression is only used
// on whole values): a number glued to a letter (INV2024, 2024abc) is part
// of an identifier, not an amount.
func amountsIn(s string, limit int) []string {
	var out []string
	for i := 0; i < len(s) && len(out) < limit; {
		if !isWordByte(s[i]) {
			i++
			continue
		}
		if !isDigit(s[i]) || i > 0 && isWordByte(s[i-1]) && !currencyBefore(s[:i]) {
			i = skipWord(s, i)
			continue
		}
		j := i
		for j < len(s) && (isDigit(s[j]) || strings.IndexByte(".,'", s[j]) >= 0 && j+1 < len(s) && isDigit(s[j+1])) {
			j++
		}
		after := currencyAfter(s[j:])
		if j < len(s) && isWordByte(s[j]) && !after || j-i > 80 {
			i = skipWord(s, j)
			continue
		}
		for _, a := range readings(s[i:j], after || currencyBefore(s[:i])) {
			if a.significant {
				out = append(out, a.key)
			}
		}
		i = j
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipWord returns the end of the word (letters and digits) at i, at least i+1.
func skipWord(s string, i int) int {
	for i++; i < len(s) && isWordByte(s[i]); i++ {
	}
	return i
}

var currencyRE = regexp.MustCompile(`^(?:` + currency + `)$`)

// currencyBefore reports a currency symbol or code ending s ("$", "usd ").
func currencyBefore(s string) bool {
	s = strings.TrimSuffix(s, " ")
	k := len(s)
	for k > 0 && k > len(s)-3 && s[k-1] >= 'a' && s[k-1] <= 'z' {
		k--
	}
	if k < len(s) {
		return (k == 0 || !isWordByte(s[k-1])) && currencyRE.MatchString(s[k:])
	}
	for _, sym := range []string{"$", "€", "£", "¥", "₹"} {
		if strings.HasSuffix(s, sym) {
			return true
		}
	}
	return false
}

var currencyAfterRE = regexp.MustCompile(`^ ?(?:[$€£¥₹]|(?:` + currency + `|dollars?|euros?|pounds?|francs?|bucks)\b)`)

// currencyAfter reports a currency symbol, code or word starting s.
func currencyAfter(s string) bool {
	t := strings.TrimPrefix(s, " ")
	if t == "" || strings.IndexByte("$\xe2\xc2\xc3ueg cjainsdpfb", t[0]) < 0 {
		return false // cheap filter: no symbol or code can start here
	}
	return currencyAfterRE.MatchString(s[:min(len(s), 12)])
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// wholeReadings returns every reading of a whole value as an amount or a date
// (kind k), normal forms: an ambiguous "1.000" or "03/04/2024" has two.
// Other kinds have none.
func wholeReadings(k Kind, s string) []string {
	switch k {
	case KindAmount:
		return amountKeys(s)
	case KindDate:
		return dateKeys(s)
	}
	return nil
}

// valueKeys are the keys an amount or a date is matched by value under:
// "amount:1000", "date:2024-03-04", one per reading.
func valueKeys(k Kind, s string) []string {
	rs := wholeReadings(k, s)
	keys := make([]string, len(rs))
	for i, r := range rs {
		keys[i] = string(k) + ":" + r
	}
	return keys
}

// amountKeys returns the readings of a whole value as an amount
// ("$1,000.50", "-12", "100.00 eur"), none if it is not one.
func amountKeys(s string) []string {
	s = strings.TrimSpace(strings.ToLower(s))
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	m := numberRE.FindStringSubmatchIndex(s)
	if m == nil || m[0] != 0 || m[1] != len(s) {
		return nil
	}
	var out []string
	for _, a := range readings(s[m[4]:m[5]], true) {
		out = append(out, a.key)
	}
	return out
}

// readings interprets a digit string with separators: "1,000.50" →
// 1000.5; "1.000,50" → 1000.5; "1,000" or "1.000" → both 1000 and 1
// (ambiguous between a thousands and a decimal separator); "1.2.3" → none.
func readings(n string, cur bool) []amount {
	seps := strings.FieldsFunc(n, func(r rune) bool { return r >= '0' && r <= '9' })
	groups := strings.FieldsFunc(n, func(r rune) bool { return r < '0' || r > '9' })
	mk := func(intPart, frac string, dec bool) amount {
		intPart = strings.TrimLeft(intPart, "0")
		sig := cur || dec || len(intPart) >= 4
		if intPart == "" {
			intPart = "0"
		}
		if frac = strings.TrimRight(frac, "0"); frac != "" {
			intPart += "." + frac
		}
		return amount{intPart, sig}
	}
	if len(seps) == 0 {
		return []amount{mk(n, "", false)}
	}
	last := groups[len(groups)-1]
	lastSep := seps[len(seps)-1]
	thousands := func(gs []string) bool {
		for _, g := range gs[1:] {
			if len(g) != 3 {
				return false
			}
		}
		return len(gs[0]) <= 3
	}
	allSame := true
	for _, s := range seps {
		allSame = allSame && s == seps[0]
	}
	switch {
	case allSame && len(seps) >= 2:
		if thousands(groups) {
			return []amount{mk(strings.Join(groups, ""), "", false)}
		}
		return nil // 1.2.3, 15.03.2024: not amounts
	case allSame && lastSep == "'":
		if thousands(groups) {
			return []amount{mk(strings.Join(groups, ""), "", false)}
		}
		return nil
	case allSame && len(last) == 3 && thousands(groups):
		// The decimal reading of "1,000" counts only next to a currency:
		// otherwise every "1,000" would explain the value 1.
		return []amount{mk(strings.Join(groups, ""), "", false), mk(groups[0], last, false)}
	case allSame:
		return []amount{mk(groups[0], last, true)}
	}
	for _, s := range seps[:len(seps)-1] { // mixed: the last separator is the decimal one
		if s != seps[0] || s == lastSep {
			return nil
		}
	}
	if lastSep == "'" || !thousands(groups[:len(groups)-1]) {
		return nil
	}
	return []amount{mk(strings.Join(groups[:len(groups)-1], ""), last, true)}
}

const months = `jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec`

// dateRE finds dates in a folded text: ISO (a time may follow), D/M/Y and
// M/D/Y with / - or ., "15 March 2024" and "March 15, 2024".
var dateRE = regexp.MustCompile(`\b(?:([0-9]{4})[-/.]([0-9]{1,2})[-/.]([0-9]{1,2})|` +
	`([0-9]{1,2})[-/.]([0-9]{1,2})[-/.]([0-9]{4})|` +
	`([0-9]{1,2})(?:st|nd|rd|th)?(?: of)? (` + months + `)[a-z]*\.?,? ([0-9]{4})|` +
	`(` + months + `)[a-z]*\.? ([0-9]{1,2})(?:st|nd|rd|th)?,? ([0-9]{4}))(?:\b|t)`)

// datesIn returns the keys of the dates of a folded text, at most limit.
// Every date has a 4-digit year: the expression runs only on a window
// around each 4-digit run, so its cost follows the number of years.
func datesIn(s string, limit int) []string {
	var out []string
	next := 0 // windows do not overlap a match already taken
	for i := 0; i < len(s) && len(out) < limit; i++ {
		if !isDigit(s[i]) || i > 0 && isDigit(s[i-1]) || i+4 > len(s) || !isDigit(s[i+1]) || !isDigit(s[i+2]) || !isDigit(s[i+3]) ||
			i+4 < len(s) && isDigit(s[i+4]) {
			continue
		}
		lo := max(next, i-24)
		for lo > 0 && lo < len(s) && !utf8.RuneStart(s[lo]) {
			lo++
		}
		w := s[lo:min(len(s), i+12)]
		for _, m := range dateRE.FindAllStringSubmatchIndex(w, -1) {
			if m[1] >= i-lo+4 || m[0] >= i-lo { // the match uses this year
				out = append(out, dateMatchKeys(w, m)...)
				next = lo + m[1]
			}
		}
	}
	return out
}

// dateKeys returns the readings of a whole value as a date, none if it
// is not one. A time after an ISO date ("2024-03-15T10:00Z") is ignored.
func dateKeys(s string) []string {
	s = strings.TrimSpace(strings.ToLower(s))
	m := dateRE.FindStringSubmatchIndex(s)
	if m == nil || m[0] != 0 {
		return nil
	}
	if rest := s[m[1]:]; rest != "" && !(s[m[1]-1] == 't' || rest[0] == ' ' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9') {
		return nil
	}
	return dateMatchKeys(s, m)
}

func dateMatchKeys(s string, m []int) []string {
	g := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return s[m[2*i]:m[2*i+1]]
	}
	var out []string
	add := func(y, mo, d string) {
		yi, _ := strconv.Atoi(y)
		mi, _ := strconv.Atoi(mo)
		di, _ := strconv.Atoi(d)
		if mi >= 1 && mi <= 12 && di >= 1 && di <= 31 {
			out = append(out, strconv.Itoa(yi)+"-"+pad2(mi)+"-"+pad2(di))
		}
	}
	switch {
	case g(1) != "":
		add(g(1), g(2), g(3))
	case g(4) != "":
		add(g(6), g(5), g(4)) // D/M/Y first, then M/D/Y
		if g(4) != g(5) {
			add(g(6), g(4), g(5))
		}
	case g(7) != "":
		add(g(9), monthNum(g(8)), g(7))
	default:
		add(g(12), monthNum(g(10)), g(11))
	}
	return out
}

func monthNum(m string) string {
	return strconv.Itoa(strings.Index(months, m)/4 + 1)
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}
