package maintenance

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// Offer is one version of the catalog; a zero Expires never expires.
type Offer struct {
	Version string
	Expires time.Time
}

// Expired says whether the offer has expired at now.
func (o Offer) Expired(now time.Time) bool { return !o.Expires.IsZero() && !now.Before(o.Expires) }

// Catalog is the platform's offered Kubernetes versions (ButlerConfig's kubernetesVersions).
// An empty Catalog offers every version: there is no catalog.
type Catalog []Offer

// Find returns the offer of v.
func (c Catalog) Find(v string) (Offer, bool) {
	for _, o := range c {
		if o.Version == v {
			return o, true
		}
	}
	return Offer{}, false
}

// Versions names the offered versions not expired at now, for error messages.
func (c Catalog) Versions(now time.Time) []string {
	var out []string
	for _, o := range c {
		if !o.Expired(now) {
			out = append(out, o.Version)
		}
	}
	return out
}

// NewestPatch is the newest version of v's minor that the catalog offers unexpired at now and
// that is newer than v, or "" when there is none.
func (c Catalog) NewestPatch(v string, now time.Time) string {
	cur, err := version.ParseSemantic(v)
	if err != nil {
		return ""
	}
	best, bestVersion := "", cur
	for _, o := range c {
		ov, err := version.ParseSemantic(o.Version)
		if err != nil || o.Expired(now) || ov.Major() != cur.Major() || ov.Minor() != cur.Minor() {
			continue
		}
		if ov.GreaterThan(bestVersion) {
			best, bestVersion = o.Version, ov
		}
	}
	return best
}

// Update is what maintenance does to a cluster's version: move it to Target ("" stays), and
// why (also when it cannot move: an expired version without a newer patch).
type Update struct {
	Target string
	Reason string
}

// VersionUpdate decides a cluster's version update at now: an expired version moves to the
// newest offered patch of its minor whatever autoUpdate says, any other version only with
// autoUpdate. A minor version is never changed: that is a person's decision (and a one-minor
// step that may need the workloads' attention).
func VersionUpdate(c Catalog, current string, autoUpdate bool, now time.Time) Update {
	offer, offered := c.Find(current)
	expired := offered && offer.Expired(now)
	if !expired && !autoUpdate {
		return Update{}
	}
	target := c.NewestPatch(current, now)
	switch {
	case expired && target == "":
		return Update{Reason: fmt.Sprintf("%s expired on %s and the catalog offers no newer patch of its minor: upgrade the minor version by hand",
			current, offer.Expires.UTC().Format(time.RFC3339))}
	case expired:
		return Update{Target: target, Reason: fmt.Sprintf("%s expired on %s", current, offer.Expires.UTC().Format(time.RFC3339))}
	case target != "":
		return Update{Target: target, Reason: "automatic patch update"}
	}
	return Update{}
}

// NewOffer is the offer of a catalog entry (expires nil: never).
func NewOffer(version string, expires *metav1.Time) Offer {
	o := Offer{Version: version}
	if expires != nil {
		o.Expires = expires.Time
	}
	return o
}
