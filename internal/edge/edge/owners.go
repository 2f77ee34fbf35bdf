package edge

import "sync"

// Owners binds transport sessions that live exactly as long as one
// connection — an SSE stream, whose messages arrive on other requests that
// name it only by an id in the URL — to the credential that opened them.
// Holding the id must grant nothing: a message for a session from anyone
// but its owner is refused before it reaches the session, so it neither
// runs as the owner's session nor lands on the owner's stream (issue 26
// item 4; server TestSSESessionHijackBeforeFirstCall).
//
// The bindings are this process's: the stream they guard is too. Safe for
// concurrent use.
type Owners struct {
	mu sync.Mutex
	m  map[string]string
}

// NewOwners returns an empty set of bindings.
func NewOwners() *Owners { return &Owners{m: map[string]string{}} }

// Bind records owner as the owner of session id.
func (o *Owners) Bind(id, owner string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m[id] = owner
}

// Owner returns who owns session id, if it is bound.
func (o *Owners) Owner(id string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, ok := o.m[id]
	return owner, ok
}

// Release forgets session id (its connection ended).
func (o *Owners) Release(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, id)
}

// Len is how many sessions are bound.
func (o *Owners) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.m)
}
