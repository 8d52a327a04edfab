package storage

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
)

// Break-glass kubeconfigs are short: minutes by default, an hour at most, whatever
// --kubeconfig-max-expiration allows members.
const (
	DefaultBreakGlassExpiration = 15 * time.Minute
	MaxBreakGlassExpiration     = time.Hour
)

// BreakGlassReason is the reason of the Event that records each break-glass kubeconfig.
const BreakGlassReason = "BreakGlassKubeconfig"

// NewBreakGlassKubeconfigREST returns tenantclusters/breakglasskubeconfig: the platform's way
// into any tenant cluster, a Team's included, where the kubeconfig subresource admits members
// only. Whoever the management cluster's RBAC lets create it (the ClusterRole
// butler-platform-breakglass, which no Team role aggregates) gets a certificate for
// butler:platform-admin:<user> in the group butler:platform-admins, which the access step binds
// to cluster-admin in every tenant; each one is recorded as an Event on the TenantCluster
// naming who and until when, and not handed out if that record cannot be written.
func NewBreakGlassKubeconfigREST(clusters rest.Getter, secrets corev1client.SecretsGetter, events corev1client.EventsGetter, maxExpiration time.Duration) *KubeconfigREST {
	if maxExpiration <= 0 || maxExpiration > MaxBreakGlassExpiration {
		maxExpiration = MaxBreakGlassExpiration
	}
	return &KubeconfigREST{clusters: clusters, secrets: secrets, events: events, breakGlass: true,
		defaultExpiration: min(DefaultBreakGlassExpiration, maxExpiration), maxExpiration: maxExpiration, now: time.Now}
}

// BreakGlassIdentity is a break-glass certificate's identity: its own user name, so the tenant's
// audit log tells it from a Team member's, in the platform admins' group.
func BreakGlassIdentity(user string) access.Identity {
	return access.Identity{User: access.Prefix + breakGlassUserPrefix + user, Groups: []string{access.PlatformAdmins}}
}

// breakGlassUserPrefix follows access.Prefix in a break-glass user's name; a member's name may
// not begin with it (KubeconfigREST.identity), so the tenant's audit log tells them apart.
const breakGlassUserPrefix = "platform-admin:"

// recordBreakGlass writes the Event on the TenantCluster that says who entered and until when
// (never the credential). A break-glass entry that leaves no record is refused.
func (r *KubeconfigREST) recordBreakGlass(ctx context.Context, cluster *butler.TenantCluster, user string, id access.Identity, expiry time.Time) error {
	if r.events == nil {
		return apierrors.NewServiceUnavailable("break-glass kubeconfigs are recorded as Events in the management cluster, which this butler-apiserver has no client of")
	}
	now := metav1.NewTime(r.now())
	msg := fmt.Sprintf("%q minted a break-glass kubeconfig: cluster-admin in the tenant as %s until %s",
		user, id.User, expiry.UTC().Format(time.RFC3339))
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", cluster.Name, now.UnixNano()), Namespace: cluster.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "TenantCluster",
			Namespace: cluster.Namespace, Name: cluster.Name, UID: cluster.UID, ResourceVersion: cluster.ResourceVersion},
		Reason: BreakGlassReason, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: string(external.Workers)},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: string(external.Workers), ReportingInstance: string(external.Workers),
	}
	if _, err := r.events.Events(cluster.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("recording the break-glass kubeconfig as an Event on %s/%s (none was handed out): %w", cluster.Namespace, cluster.Name, err))
	}
	klog.FromContext(ctx).Info("Break-glass kubeconfig", "tenantCluster", klog.KObj(cluster), "user", user, "identity", id.User, "until", expiry.UTC())
	return nil
}
