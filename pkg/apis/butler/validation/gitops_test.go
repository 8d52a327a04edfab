package validation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A credential written in the URL is refused without repeating it: the error is shown to the
// asker, logged and may be recorded in Events.
func TestGitURLErrorsCarryNoCredential(t *testing.T) {
	for _, u := range []string{"https://x-token:ghp_secret@github.com/example/fleet", "https://ghp_secret@github.com/example/fleet", "ssh://git:ghp_secret@git.example.com/fleet"} {
		errs := validateGitURL(u, field.NewPath("url"))
		if len(errs) != 1 || strings.Contains(errs.ToAggregate().Error(), "ghp_secret") || !strings.Contains(errs.ToAggregate().Error(), "name a Secret in secretRef") {
			t.Errorf("%s: %v", u, errs)
		}
	}
}

// A cluster stored before the repository's rules, with a repository they refuse, still updates
// (scale, upgrade); a change of the repository meets every rule.
func TestGitRepositoryRulesRatchet(t *testing.T) {
	old := validTenantCluster()
	old.Spec.Addons.Gitops.Repository.URL = "git@github.com:example/fleet.git"
	old.Spec.Addons.Gitops.Repository.Branch = "my branch"
	scaled := old.DeepCopy()
	scaled.Spec.Workers.Replicas++
	if errs := ValidateTenantClusterUpdate(scaled, old); len(errs) > 0 {
		t.Errorf("scaling a cluster with a repository stored before the rules: %v", errs)
	}
	moved := scaled.DeepCopy()
	moved.Spec.Addons.Gitops.Repository.Path = "./clusters/prod"
	errs := ValidateTenantClusterUpdate(moved, old)
	if len(errs) != 2 || errs[0].Field != "spec.addons.gitops.repository.url" || errs[1].Field != "spec.addons.gitops.repository.branch" {
		t.Errorf("a changed repository: %v, want the url and branch refused", errs)
	}
}

// URLs that url.Parse, and so go-git in Flux's source-controller, reads differently from how
// they look: an empty host (`https://:443/`) dials the local system, past a policy that judges
// the host as written; an upper-case scheme is accepted by url.Parse and refused by Flux's
// GitRepository (`^(http|https|ssh)://`), so the cluster could never sync.
func TestAttackGitURLsReadOtherwise(t *testing.T) {
	for _, u := range []string{
		"https://:443/fleet.git",
		"http://:8080/fleet.git",
		"ssh://git@:22/fleet.git",
		"HTTPS://github.com/example/fleet.git",
		"Ssh://git@github.com/example/fleet.git",
	} {
		if errs := validateGitURL(u, field.NewPath("url")); len(errs) != 1 || errs[0].Field != "url" {
			t.Errorf("%s: %v, want one error at url", u, errs)
		}
	}
	for _, u := range []string{"https://github.com/example/fleet.git", "ssh://git@github.com:2222/example/fleet.git", "https://[2001:db8::1]:8443/fleet.git"} {
		if errs := validateGitURL(u, field.NewPath("url")); len(errs) != 0 {
			t.Errorf("%s: %v, want none", u, errs)
		}
	}
}

// The interval is refused outside 10s..24h at its field path; within, accepted.
func TestGitRepositoryInterval(t *testing.T) {
	for d, ok := range map[time.Duration]bool{0: false, 9 * time.Second: false, -time.Minute: false, 10 * time.Second: true,
		time.Minute: true, 24 * time.Hour: true, 25 * time.Hour: false} {
		tc := validTenantCluster()
		tc.Spec.Addons.Gitops.Repository.Interval = &metav1.Duration{Duration: d}
		errs := ValidateTenantCluster(tc)
		if ok != (len(errs) == 0) || (!ok && (len(errs) != 1 || errs[0].Field != "spec.addons.gitops.repository.interval")) {
			t.Errorf("interval %s: %v", d, errs)
		}
	}
}
