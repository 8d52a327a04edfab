package machines

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// A token the cluster does not know: the condition says the token is not signed, also when the
// wait's last read of cluster-info fails on the wait's own deadline (client-go's rate limiter
// refuses a request that would outlast it). Seen in the e2e: the machine said only "rate:
// Wait(n=1) would exceed context deadline".
func TestDiscoverUnknownTokenNamesTheToken(t *testing.T) {
	ca := newTestCA(t)
	f := newFakeCluster(clusterInfo(t, ca.pem, testToken))
	var reads atomic.Int32
	f.client.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if reads.Add(1) == 1 {
			return false, nil, nil // the first read is answered
		}
		return true, nil, errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline")
	})
	info := pinnedInfo(t, ca)
	info.Token = "zzzzzz.0123456789abcdef"
	_, err := f.joiner().Discover(context.Background(), info)
	if reasonOf(err) != ReasonDiscoveryFailed || !strings.Contains(err.Error(), `not signed for token "zzzzzz"`) {
		t.Errorf("got %v (reason %q); want DiscoveryFailed saying cluster-info is not signed for the token", err, reasonOf(err))
	}
	// A cluster-info never read says why it was not.
	f = newFakeCluster()
	_, err = f.joiner().Discover(context.Background(), info)
	if reasonOf(err) != ReasonDiscoveryFailed || !strings.Contains(err.Error(), "reading kube-public/cluster-info") || !strings.Contains(err.Error(), "not found") {
		t.Errorf("no cluster-info: got %v (reason %q)", err, reasonOf(err))
	}
}
