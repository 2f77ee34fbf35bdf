package audit

import "context"

// Appender is where audit records go: the store's hash-chained trail
// implements it (store.DB; its compile-time assertion is in the store).
// Writers of the trail need only this, as Vault's audit broker needs only
// its backends' LogRequest. Append must be safe for concurrent use.
//
// Append adds rec to the end of the trail and assigns rec.Seq,
// rec.PrevHash, rec.Hash and rec.Instance (and rec.Time when zero). It
// returns nil only once the record is durable; on an error the record is
// not in the trail and the caller must refuse the action it was
// auditing (fail closed).
type Appender interface {
	Append(ctx context.Context, rec *Record) error
}
