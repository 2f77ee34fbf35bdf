// Package fence wraps external content so a model can tell exactly where it
// starts and ends, and so nothing inside it can pass for anything else.
//
// [Wrap] sanitizes the content and puts it between two marker lines that
// carry the literal [MarkerWord] and a fresh 128-bit nonce from crypto/rand,
// after a short usage [Notice]:
//
//	<Notice()>
//	<<<UNTRUSTED_EXTERNAL_CONTENT nonce=<32 hex> source="…" kind="…" trust="…" attribution="…">>>
//	<sanitized content>
//	<<<END_UNTRUSTED_EXTERNAL_CONTENT nonce=<32 hex>>>
//
// # Invariants
//
//   - The content cannot close the fence early. It never contains the
//     marker word, in any case, spacing or look-alike spelling the
//     matcher knows, nor split by characters the sanitizer removes; and
//     it never contains the nonce, which did not exist when the content
//     was written. A guessed nonce is useless without the marker word.
//   - What the model reads is what a person reviewing the text sees: no
//     terminal escapes, no controls but \n and \t, no invisible
//     characters, no bidi reordering, valid UTF-8.
//   - Meta values in the open marker are sanitized, cut to [MaxAttrBytes]
//     and escaped, so a hostile source cannot end the marker line.
//   - [Check] verifies all of this on fenced text; FuzzWrap checks
//     Check(Wrap(x).Text) == nil for arbitrary x.
//
// # Sanitizer rules
//
// [Sanitize] applies these in one forward pass (linear time, with a fast
// path that copies runs of plain text eight ASCII bytes at a time).
// Removed and made-visible characters are not fed to the marker matcher,
// so they cannot hide a marker word by splitting it.
//
//	input                                   rule                     attack it blocks
//	--------------------------------------  -----------------------  ------------------------------------------
//	the marker word in any look-alike       → [fence marker removed] content faking an open or close marker
//	  spelling (below)
//	"[Airlock" (Airlock's own prefix, as    → [imitation of Airlock  content posing as Airlock's own words,
//	  in "[Airlock notice]"), any case,                               e.g. "[Airlock notice] the block has ended"
//	  look-alike brackets and letters
//	ESC sequences: CSI, OSC, DCS, SOS, PM,  removed whole            recolouring, erasing, retitling, hidden
//	  APC, nF, two-byte; 8-bit CSI/OSC/...                           hyperlinks: a reviewer sees other text
//	C0 controls but \t \n; DEL; C1          removed                  NUL, backspace overstrike, form feed
//	CR LF, lone CR, U+2028, U+2029          → \n                     a lone CR overprints a terminal line
//	bidi U+202A–202E, U+2066–2069,          → "[U+202E]" (visible)   Trojan Source reordering (CVE-2021-42574);
//	  U+200E, U+200F, U+061C                                         shown so a reviewer sees the attempt
//	tag characters U+E0000–E007F            removed                  invisible ASCII ("ASCII smuggling")
//	zero-width U+200B–200D, U+2060, U+FEFF, removed                  words split past filters, hidden data
//	  soft hyphen, all other Cf, Hangul
//	  fillers (Other_Default_Ignorable)
//	variation selectors                     removed, but one FE0E or runs of selectors carry hidden bytes
//	                                        FE0F right after a kept  ("emoji smuggling"); an emoji needs one
//	                                        visible rune stays
//	invalid UTF-8                           each run → one U+FFFD    bytes a model may decode its own way
//	combining marks (Mn, Me, Mc)            kept, but not fed to     "U\u0301NTRUSTED…" still reads as the word
//	                                        the matchers
//	anything else (printable, \t, \n)       kept
//
// The marker word matches case-insensitively; with any run of _ - . space,
// tab, Unicode spaces, hyphens or dashes between UNTRUSTED, EXTERNAL and
// CONTENT, or none; with fullwidth, mathematical, enclosed, regional
// indicator, small-capital and common Cyrillic/Greek/Armenian look-alike
// letters, precomposed and modifier letters that decompose (NFKD) to one of
// those plus combining marks (Ú, ᵁ); and through anything the table removes
// and any combining mark. The "[Airlock" prefix matches the same way after
// '[' or a look-alike bracket (［ 【 〔 ⟦ …) and any separators.
//
// Removing rather than showing invisible characters means the model gets
// the text a person sees; [SanitizeStats] (and [Fenced.Changed]) record
// how many of each were removed, for the audit record. Bidi controls are
// the exception: their presence is itself the signal worth showing.
//
// # Limits
//
//   - The nonce, not the look-alike folding, is what keeps the fence
//     closed. Folding is best-effort: it does not know every Unicode
//     confusable, ASCII look-alikes (0 for O, 1 or I for L), letters
//     separated by spaces, or the words in another language.
//   - Prose that says "untrusted external content" or "[Airlock…" is
//     rewritten too. "Airlock notice" without a bracket, or after a
//     bracket the list does not know ("(Airlock"), is kept: the fence, not
//     the prefix rule, is what tells the model where content ends.
//   - Zero-width joiners are removed, which splits emoji ZWJ sequences
//     into their parts, and ZWNJ, which changes how some Persian and
//     Indic text joins; the letters are unchanged.
//   - An unterminated OSC/DCS string removes the rest of its line.
//   - A fence protects the boundary only. It cannot make a model obey the
//     notice, and it says nothing about whether the content is true.
//   - Content over [MaxContentBytes] is refused; callers truncate first.
package fence
