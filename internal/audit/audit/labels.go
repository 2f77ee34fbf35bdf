package audit

import (
	"encoding/json"

	"github.com/airlock-dev/airlock/internal/kit/rawjson"
)

// Label is what a call's record says of one content label its answer
// carries (the store's provenance row): its per-context seq, source,
// integrity, the SHA-256 and length of the text as recorded, how many
// older rows lost their text to make room, and its readers (nil: public).
type Label struct {
	Seq       int64
	Source    string
	Integrity string
	SHA256    string
	Bytes     int64
	Evicted   int
	Readers   []string
}

// WithLabels is extra with key "labels" set to labels, as a call's record
// carries them: the store fills it in once the labels have their seqs,
// inside the transaction that commits both (store.DB.AppendLabelled). An
// extra that is not a JSON object is kept under "extra".
func WithLabels(extra json.RawMessage, labels []Label) json.RawMessage {
	list := make([]map[string]any, len(labels))
	for i, l := range labels {
		m := map[string]any{"seq": l.Seq, "source": l.Source, "integrity": l.Integrity,
			"sha256": l.SHA256, "bytes": l.Bytes, "evicted": l.Evicted}
		if l.Readers != nil {
			m["readers"] = l.Readers
		}
		list[i] = m
	}
	return MergeExtra(extra, "labels", list)
}

// MergeExtra is extra with key set to v (JSON); an extra that is not a
// JSON object is kept under "extra".
func MergeExtra(extra json.RawMessage, key string, v any) json.RawMessage {
	m := map[string]json.RawMessage{}
	// null unmarshals into a nil map: not an object either.
	if len(extra) > 0 && (json.Unmarshal(extra, &m) != nil || m == nil) {
		m = map[string]json.RawMessage{"extra": extra}
	}
	m[key] = rawjson.Marshal(v)
	return rawjson.Marshal(m)
}
