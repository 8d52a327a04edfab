package tenantaddon

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// A failed addon comes back 15 s after its first failure, then doubling to 5 min; a success
// starts it over.
func TestBackoffDoublesToFiveMinutesAndForgetsOnSuccess(t *testing.T) {
	c := &Controller{retries: workqueue.NewTypedItemExponentialFailureRateLimiter[string](15*time.Second, 5*time.Minute)}
	for i, want := range []time.Duration{15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
		if got := c.backoff("ns/a"); got != want {
			t.Fatalf("failure %d: backoff %v, want %v", i+1, got, want)
		}
	}
	if got := c.backoff("ns/b"); got != 15*time.Second {
		t.Fatalf("another key's first backoff %v", got)
	}
	c.succeeded("ns/a")
	if got := c.backoff("ns/a"); got != 15*time.Second {
		t.Fatalf("after a success: backoff %v, want 15s", got)
	}
}
