package hooks

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
)

// TestLiveReload: a reload that leaves the notifications section alone
// keeps the notifier (and its queues); one that changes it swaps in the
// new section's notifier; none configured is a nil notifier, and a nil
// Live closes nothing (a runner that failed before building one).
func TestLiveReload(t *testing.T) {
	none := &config.Config{}
	one := &config.Config{Notify: config.Notify{Webhooks: []config.WebhookConfig{{URL: "http://127.0.0.1:9/hook"}}}}
	l := NewLive(none, nil)
	if l.Load() != nil {
		t.Fatal("no webhook and no command: the notifier should be nil")
	}
	l.Reload(none, one)
	first := l.Load()
	if first == nil {
		t.Fatal("a reload adding a webhook kept the nil notifier")
	}
	same := &config.Config{Notify: config.Notify{Webhooks: []config.WebhookConfig{{URL: "http://127.0.0.1:9/hook"}}}}
	l.Reload(one, same)
	if l.Load() != first {
		t.Fatal("a reload with the same notifications section replaced the notifier")
	}
	l.Reload(same, none)
	if l.Load() != nil {
		t.Fatal("a reload removing every webhook kept the old notifier")
	}
	l.Close()
	var nilLive *Live
	nilLive.Close()
}
