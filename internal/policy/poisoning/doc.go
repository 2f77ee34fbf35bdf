// Package poisoning reads an upstream MCP tool definition the way an
// attacker writes it and tells the reviewer what to look at (issue 25:
// tool poisoning caught at review). Once an operator approves a
// definition, its description and input schema reach the agent through
// declare_need's catalog; this review is what stands between a poisoned
// description and the agent.
//
// [Scan] returns a [Report]: named, explained [Signal]s, each finding with
// the field it was found in, a weight and an excerpt, and a score; a
// definition whose score reaches [Threshold] is flagged. The signals are
// word classes combined, not a phrase list: an imperative verb with a
// sensitive object in one clause (DataRequest), an authority word in any
// bracket or case (AuthorityMarker), a superlative about the tool itself
// (SelfPromotion), a claim to replace another tool (FunctionOverlap), a
// trigger on another action followed by an instruction (OtherTools) …;
// and the text is normalised first (invisible characters removed,
// NFKC, Cyrillic and Greek look-alikes folded), so an instruction split by
// zero-width characters or spelt in fullwidth letters reads as what it
// says — and the evasion is itself a signal. A [Catalog] of every
// upstream's tools adds the checks across upstreams: look-alike names
// (send_emai1, sendEmail beside send_email), the same name as another
// upstream's tool, a description naming another upstream's tool.
//
// The invariant it keeps: Scan only reports. It reads untrusted text, so
// it never panics (FuzzScan), costs time linear in its input (RE2
// patterns, each string read to maxText bytes, the schema walk bounded),
// and answers the same for the same input. What a flag means for an
// approval (an override with a reason) is decided by its callers
// (pinning, the operator's API).
//
// Its limits, stated in SECURITY.md too: it judges words, not intent. A
// description that asks for nothing unusual in unusual words (a
// paraphrase no word class covers, another language, an instruction
// split across fields), a tool that behaves badly while describing itself
// honestly, or a result that carries the attack at call time (the fence
// handles those) get through; an honest description that reads like an
// attack (a shell tool that names rm -rf, an SSH tool that names
// ~/.ssh/config) is flagged and needs the operator's override. Measured
// on the corpus in testdata/poisoning (BENCHMARKS.md), tuned and held-out
// parts apart.
package poisoning
