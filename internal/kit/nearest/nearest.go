// Package nearest finds the word a typo was meant to be: the "did you mean"
// of check-time errors (an unknown capability, a missing file, an unknown
// configuration key). Invariant: it suggests only a candidate close enough
// to be a typo of the text, never merely the least bad one.
package nearest

// Name returns the candidate nearest to text by edit distance when it is
// close enough to be a typo (at most a third of text's length plus one),
// else "". Ties go to the earlier candidate.
func Name(text string, cands []string) string {
	best, bestD := "", len(text)/3+2
	for _, c := range cands {
		if d := distance(text, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
