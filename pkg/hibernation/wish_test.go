package hibernation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
)

// TestIdleTimeoutDefault: a cluster that wakes on request always has an idle time, so whatever
// woke it does not keep it awake for good.
func TestIdleTimeoutDefault(t *testing.T) {
	for _, c := range []struct {
		h    *v1alpha1.HibernationSpec
		want time.Duration
	}{
		{nil, 0},
		{&v1alpha1.HibernationSpec{}, 0},
		{&v1alpha1.HibernationSpec{WakeOnRequest: true}, DefaultIdleTimeout},
		{&v1alpha1.HibernationSpec{WakeOnRequest: true, IdleTimeout: &metav1.Duration{Duration: time.Minute}}, time.Minute},
	} {
		if got := IdleTimeout(c.h); got != c.want {
			t.Errorf("IdleTimeout(%+v) = %s, want %s", c.h, got, c.want)
		}
	}
}
