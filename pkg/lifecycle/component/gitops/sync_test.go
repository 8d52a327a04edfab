package gitops

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// object is a Flux object as the tenant returns it.
func object(kind string, generation, observed int64, ready, reason, message string, status map[string]any) *unstructured.Unstructured {
	st := map[string]any{"observedGeneration": observed}
	if ready != "" {
		// The generation the condition was set for: the observed one, as after a success.
		st["conditions"] = []any{map[string]any{"type": "Ready", "status": ready, "reason": reason, "message": message,
			"lastTransitionTime": "2026-11-28T17:00:00Z", "observedGeneration": observed}}
	}
	for k, v := range status {
		st[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "metadata": map[string]any{"name": Name, "namespace": Namespace, "generation": generation}, "status": st}}
	return u
}

const (
	head = "main@sha1:2f6c2b5d0a3e4c1f9b8a7d6e5c4b3a2f1e0d9c8b"
	prev = "main@sha1:0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c"
)

// Each way a repository fails is its own reason, with Flux's message; the revision last applied
// is kept while a later one fails; in sync only when the Kustomization applied the source's
// latest revision, both at their current generation.
func TestRead(t *testing.T) {
	artifact := map[string]any{"artifact": map[string]any{"revision": head}}
	okSource := object("GitRepository", 1, 1, "True", "Succeeded", "stored artifact for revision '"+head+"'", artifact)
	applied := func(rev string) map[string]any {
		return map[string]any{"lastAppliedRevision": rev, "lastAttemptedRevision": rev}
	}
	for _, tc := range []struct {
		name         string
		repo, ks     *unstructured.Unstructured
		reason, rev  string
		inSync       bool
		messageHasIt string
	}{
		{"synced", okSource, object("Kustomization", 1, 1, "True", "ReconciliationSucceeded", "Applied revision: "+head, applied(head)), ReasonSynced, head, true, head},
		{"new commit not applied yet", okSource, object("Kustomization", 1, 1, "True", "ReconciliationSucceeded", "Applied revision: "+prev, applied(prev)), ReasonProgressing, prev, false, prev},
		{"spec changed, not observed", object("GitRepository", 2, 1, "True", "Succeeded", "", artifact), object("Kustomization", 1, 1, "True", "ReconciliationSucceeded", "", applied(head)), ReasonProgressing, head, false, ""},
		{"not there yet", nil, nil, ReasonProgressing, "", false, "not in the tenant yet"},
		{"unreachable", object("GitRepository", 1, 1, "False", "GitOperationFailed",
			"failed to checkout and determine revision: unable to clone 'https://git.example.com/fleet.git': dial tcp 203.0.113.7:443: connect: connection refused", nil),
			object("Kustomization", 1, 1, "True", "ReconciliationSucceeded", "", applied(prev)), ReasonRepositoryUnreachable, prev, false, "connection refused"},
		{"credential rejected", object("GitRepository", 1, 1, "False", "GitOperationFailed",
			"failed to checkout and determine revision: unable to clone 'https://git.example.com/fleet.git': authentication required", nil),
			object("Kustomization", 1, 1, "", "", "", nil), ReasonCredentialRejected, "", false, "authentication required"},
		{"credential unusable", object("GitRepository", 1, 1, "False", "AuthenticationFailed", "failed to configure authentication options: invalid 'ssh' auth option: 'known_hosts' is required", nil),
			object("Kustomization", 1, 1, "", "", "", nil), ReasonCredentialRejected, "", false, "known_hosts"},
		{"branch missing", object("GitRepository", 1, 1, "False", "GitOperationFailed",
			"failed to checkout and determine revision: unable to clone: couldn't find remote ref \"refs/heads/nope\": git repository: 'https://git.example.com/fleet.git'", nil),
			object("Kustomization", 1, 1, "", "", "", nil), ReasonBranchNotFound, "", false, "refs/heads/nope"},
		{"path missing", okSource, object("Kustomization", 1, 1, "False", "ArtifactFailed",
			"kustomization path not found: stat /tmp/kustomization-1/clusters/nope: no such file or directory", map[string]any{"lastAttemptedRevision": head}),
			ReasonPathNotFound, "", false, "clusters/nope"},
		{"build failed", okSource, object("Kustomization", 1, 1, "False", "BuildFailed", "kustomize build failed: accumulating resources", nil), ReasonBuildFailed, "", false, "kustomize build failed"},
		{"apply refused", okSource, object("Kustomization", 1, 1, "False", "ReconciliationFailed",
			"ConfigMap/default/x dry-run failed: ConfigMap \"x\" is invalid", applied(prev)), ReasonApplyFailed, prev, false, "dry-run failed"},
	} {
		got, err := Read(tc.repo, tc.ks)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Reason != tc.reason || got.Revision != tc.rev || got.InSync != tc.inSync || !strings.Contains(got.Message, tc.messageHasIt) {
			t.Errorf("%s: %+v, want reason %s, revision %q, in sync %v, a message with %q", tc.name, got, tc.reason, tc.rev, tc.inSync, tc.messageHasIt)
		}
	}
}

// tried is u after Flux tried generation g and failed: its Ready condition carries g, while
// status.observedGeneration stays at the last success (Flux moves it only on success).
func tried(u *unstructured.Unstructured, g int64) *unstructured.Unstructured {
	u = u.DeepCopy()
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	conds[0].(map[string]any)["observedGeneration"] = g
	_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
	return u
}

// A change of URL, credential or path that fails is said as soon as Flux tried it, although
// Flux leaves status.observedGeneration at the last success (read by the condition's own
// generation); a failure of the spec before, not yet tried again, is not said of the new one.
func TestReadFailureOfAChangedSpec(t *testing.T) {
	artifact := map[string]any{"artifact": map[string]any{"revision": prev}}
	applied := object("Kustomization", 1, 1, "True", "ReconciliationSucceeded", "Applied revision: "+prev, map[string]any{"lastAppliedRevision": prev})
	okSource := object("GitRepository", 1, 1, "True", "Succeeded", "stored artifact for revision '"+prev+"'", artifact)
	refused := "failed to checkout and determine revision: unable to list remote for 'https://10.250.255.254:9444/apps.git': dial tcp 10.250.255.254:9444: connect: connection refused"
	for _, tc := range []struct {
		name     string
		repo, ks *unstructured.Unstructured
		reason   string
	}{
		{"URL changed, its fetch failed", tried(object("GitRepository", 2, 1, "False", "GitOperationFailed", refused, artifact), 2), applied, ReasonRepositoryUnreachable},
		{"first fetch failed", tried(object("GitRepository", 1, 0, "False", "GitOperationFailed", refused, nil), 1), object("Kustomization", 1, 0, "", "", "", nil), ReasonRepositoryUnreachable},
		{"path changed, not found", okSource, tried(object("Kustomization", 2, 1, "False", "ArtifactFailed",
			"kustomization path not found: stat /tmp/kustomization-1/nope: no such file or directory", map[string]any{"lastAppliedRevision": prev}), 2), ReasonPathNotFound},
		{"URL changed, not tried yet; the failure is the URL's before", tried(object("GitRepository", 3, 1, "False", "GitOperationFailed", refused, artifact), 2), applied, ReasonProgressing},
	} {
		got, err := Read(tc.repo, tc.ks)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		rev, _, _ := unstructured.NestedString(tc.ks.Object, "status", "lastAppliedRevision")
		if got.Reason != tc.reason || got.InSync || got.Revision != rev {
			t.Errorf("%s: %+v, want reason %s, not in sync, the last applied revision", tc.name, got, tc.reason)
		}
	}
}

// The attack: the repository's server writes part of Flux's message (a git server's ERR line
// reaches it as "remote error: ..."), and the tenant's admins may write all of it: terminal
// control sequences carried into the TenantCluster's condition reach whoever reads it in a
// terminal, and a cut inside a character left invalid UTF-8.
func TestAttackReadCarriesNoControlCharacters(t *testing.T) {
	msg := "unable to clone: remote error: \x1b]0;owned\x07\x1b[2J\u009b31m" + strings.Repeat("a", maxMessage-46) + "ééé"
	got, err := Read(object("GitRepository", 1, 1, "False", "GitOperationFailed", msg, nil), object("Kustomization", 1, 1, "", "", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.ValidString(got.Message) || strings.ContainsFunc(got.Message, unicode.IsControl) || !strings.Contains(got.Message, "remote error: ]0;owned[2J31maaa") {
		t.Errorf("message %q", got.Message)
	}
	multi, _ := Read(object("GitRepository", 1, 1, "False", "GitOperationFailed", "line one\nline two", nil), object("Kustomization", 1, 1, "", "", "", nil))
	if multi.Message != "line one\nline two" {
		t.Errorf("a message of two lines became %q", multi.Message)
	}
}
