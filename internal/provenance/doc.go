// Package provenance traces the arguments of a declared need to the
// labelled content they came from ("provenance at the boundary").
//
// # What it owns
//
// A context records every result handed to the agent as a [Source] with a
// label (attribution id, [Integrity], readers), plus its trusted inputs:
// the task text the principal gave and the values an approver endorsed.
// [NewIndex] prepares those sources for one decision; [Index.Trace] takes
// the JSON-decoded arguments of a need and returns, for each leaf value,
// the sources that explain it or its parts ([Match]), and a join of them:
// [Origin], [Integrity] and readers. The package is pure (no I/O, no
// clock, no randomness), deterministic (same sources and arguments, same
// result), imports only the standard library and golang.org/x/text, and
// treats both the sources and the arguments as hostile.
//
// # Invariant: loose evidence convicts, only exact evidence acquits
//
// A value is [OriginTrusted] only if the WHOLE value appears in one trusted
// source under its kind's exact, meaning-preserving key ([Normalize]):
// look-alike characters are not folded there, so a Cyrillic "раypal.com"
// or "jay@gооgle.com" never passes for a trusted "paypal.com" or
// "jay@google.com". Trusted wins when the value is found in trusted and
// untrusted sources alike: the principal's input explains it. A trusted
// text's host glued to the next sentence ("www.x.com.They sent") is also
// read without the capitalised word; untrusted text gets no such reading.
//
// Otherwise the value is [OriginUntrusted] if any part of it is found in
// untrusted content under the LOOSE comparison: the look-alike [Skeleton]
// (percent-decoding, HTML references, IDNA A-labels, NFKD, invisible
// characters and marks removed, confusables, defanging, case), reduced to
// its letters and digits (separators dropped, 0/o and 1/l/i merged),
// looked up:
//
//   - as a whole value and as each structured token in it (IBAN, e-mail,
//     URL with its host and host+path variants, host, phone, handle, file,
//     identifier) between word boundaries (HowFolded);
//   - inside a longer run when it has at least 10 letters and digits of
//     which 4 digits (HowPartial): a piece of an IBAN or account number;
//   - concatenated with another argument's value, in either order
//     (HowSplit): an identifier split across two arguments;
//   - for free text, as 6 consecutive words (Options.ShingleWords) of a
//     source (HowText);
//   - as runs of its compact form wherever the words break: 20 letters
//     and digits in a row with a digit among them, 32 letters alone,
//     found anywhere in a source (HowRun). Re-spacing a sentence or
//     splitting its words every few letters ("Chec k ou t th is l ink:
//     www .sec ure- syst ems- 252. com") hides every word, token and
//     shingle, not the run. One look-up per position up to 256 (evenly
//     sampled beyond), so a run that long is always found in a value of
//     up to 275 compact letters and digits, and in a longer one a run as
//     long plus the sampling step;
//   - by value for amounts and dates, by name for handles (HowValue).
//
// Else it is [OriginAgent]: the agent wrote it. That includes a value
// composed of trusted pieces ("Invoice 42 for March") and a look-alike of
// a trusted value: neither is the principal's input.
//
// Readers: for a trusted value, the meet (intersection) of the readers of
// the trusted sources that explain it exactly; otherwise the meet over all
// matched sources. nil means public; an empty non-nil slice, nobody.
//
// # Significance
//
// Short and common values must not be found everywhere. A part is looked
// up only if its compact form has at least 6 letters and digits, and, when
// it holds no digit and is a word, free text, amount or identifier, at
// least 12. Booleans and null are never matched. Amounts in sources are
// indexed only when significant: a decimal part (100.00), a currency
// symbol, code or word next to it ($100, 100 EUR, 100 dollars) or at
// least 4 integer digits (1,000, 2024); so "100" in "100 people" explains
// nothing, while a bill's "100.00" explains the amount 100. A value's
// amount is compared by value with those (1,000.50 == 1000.5; "1.000" is
// read both as 1000 and as 1, and is exact only if every reading is in
// the trusted source). Dates in ISO, D/M/Y, M/D/Y (both readings) and
// month-name forms are compared as YYYY-MM-DD.
//
// # Bounds
//
// NewIndex indexes at most Options.MaxIndexBytes (4 MiB) of source text,
// trusted sources first; the rest is reported as HowUnindexed evidence,
// which makes any significant unexplained value untrusted (fail-safe).
// Building is linear: a suffix array over the compact stream (4 bytes per
// byte of it) and hand-written number and date scanners; BenchmarkNewIndex
// measures about 0.2 to 0.9 ms per KB of dense invoice-like text on a busy
// 2-core machine, BenchmarkTrace 1 to 2 ms per need against 200 KB. A
// [Memo] keeps each source text's analysis (most of that cost), keyed by
// the text itself, so the next index of a context that grew by a label
// analyses only the new text (BenchmarkNewIndexMemo: the suffix array is
// the rest); its index is the one NewIndex builds. Trace considers MaxValueBytes (4 KiB)
// of each value (a truncated value is never trusted), MaxLeaves (256)
// leaves, 64 tokens and 256 shingles per value, 256 occurrences per
// look-up, split pairs among 64 short leaves, and reports MaxMatches (16)
// matches per argument. Every step is linear or n·log n in its input
// (RE2 regular expressions, no backtracking).
//
// # Limits (honest)
//
//   - Confusables are a compact table (Cyrillic, Greek, Armenian,
//     Cherokee, Latin small capitals, separators), not Unicode's full
//     confusables.txt; multi-character look-alikes ("rn" for "m", "vv"
//     for "w") are not folded.
//   - IDNA A-labels (xn--…) are decoded and folded like the host they
//     encode, so an agent writing the ASCII form of a look-alike host it
//     read is traced; an A-label of another name ("secure-systems-252ë")
//     is another name.
//   - Transformations of a value are not traced: reversed, re-encoded in
//     base64 or hex, spelled out ("one hundred", "jay at google dot com"
//     with bare words), translated, or split into three or more arguments
//     or into pieces shorter than the thresholds above.
//   - Free text is matched by runs of 6 words, or of 32 letters however
//     spaced: a paraphrase of an injected instruction is not found, nor a
//     letters-only host broken into pieces inside the agent's own words
//     ("visit www .sec ure- syst ems. com": its 19 letters are below the
//     run, its words no token).
//   - Exact keys lower-case URL paths and identifiers, and ignore the
//     URL scheme and fragment: http://x.com/A and https://x.com/a are one
//     trusted address.
//   - An ambiguous date (03/04/2024) is indexed under both readings.
package provenance
