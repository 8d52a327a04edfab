package gitops

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/flux"
)

// Reasons of the GitOpsSynced condition: one word for each way a repository fails, so that the
// condition says which without reading Flux's objects in the tenant.
const (
	ReasonSynced                = "Synced"
	ReasonProgressing           = "Progressing"
	ReasonRepositoryRefused     = "RepositoryRefused"
	ReasonRepositoryNotAdmitted = "RepositoryNotAdmitted"
	ReasonRepositoryUnreachable = "RepositoryUnreachable"
	ReasonCredentialMissing     = "CredentialMissing"
	ReasonCredentialRejected    = "CredentialRejected"
	ReasonBranchNotFound        = "BranchNotFound"
	ReasonPathNotFound          = "PathNotFound"
	ReasonBuildFailed           = "BuildFailed"
	ReasonApplyFailed           = "ApplyFailed"
)

// maxMessage bounds Flux's message carried into the TenantCluster's condition.
const maxMessage = 1024

// Sync is the repository's state as the TenantCluster shows it.
type Sync struct {
	// Revision is the revision last applied ("main@sha1:..."), kept while a later one fails.
	Revision string
	// InSync: the Kustomization is Ready at the source's latest revision, both observed at
	// their current generation.
	InSync          bool
	Reason, Message string
}

// Read reads the GitRepository and Kustomization the step wrote (either nil when not there yet).
func Read(repoObj, ksObj *unstructured.Unstructured) (Sync, error) {
	if repoObj == nil || ksObj == nil {
		return Sync{Reason: ReasonProgressing, Message: "Flux's objects are not in the tenant yet"}, nil
	}
	repo, err := external.FromUnstructured[flux.GitRepository](repoObj)
	if err != nil {
		return Sync{}, err
	}
	ks, err := external.FromUnstructured[flux.Kustomization](ksObj)
	if err != nil {
		return Sync{}, err
	}
	out := Sync{Revision: ks.Status.LastAppliedRevision}
	srcReady := meta.FindStatusCondition(repo.Status.Conditions, flux.ReadyCondition)
	ksReady := meta.FindStatusCondition(ks.Status.Conditions, flux.ReadyCondition)
	// A failure is said once Flux tried the current spec: Flux moves status.observedGeneration
	// only when a reconcile succeeds, while each condition carries the generation it was set for
	// (fluxcd/pkg/runtime/conditions.Set), so a failed URL or path change shows there only.
	switch {
	case failed(srcReady) && srcReady.ObservedGeneration == repo.Generation:
		out.Reason, out.Message = sourceFailure(srcReady), srcReady.Message
	case failed(ksReady) && ksReady.ObservedGeneration == ks.Generation:
		out.Reason, out.Message = applyFailure(ksReady), ksReady.Message
	case succeeded(srcReady) && succeeded(ksReady) && repo.Status.Artifact != nil &&
		repo.Status.ObservedGeneration == repo.Generation && ks.Status.ObservedGeneration == ks.Generation &&
		ks.Status.LastAppliedRevision == repo.Status.Artifact.Revision:
		out.InSync, out.Reason, out.Message = true, ReasonSynced, "applied "+out.Revision
	default:
		out.Reason, out.Message = ReasonProgressing, "Flux is fetching or applying"
		if ksReady != nil && ksReady.Message != "" {
			out.Message = ksReady.Message
		}
	}
	out.Message = statusText(out.Message)
	return out, nil
}

// statusText is Flux's message fit for the TenantCluster's condition. The repository's server
// writes part of it (a git server's ERR line arrives as "remote error: ...") and the tenant's
// admins may write all of it, so control characters other than newline and tab are dropped (a
// terminal would run them as commands), and it is cut at maxMessage on a character's boundary.
func statusText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func failed(c *metav1.Condition) bool    { return c != nil && c.Status == metav1.ConditionFalse }
func succeeded(c *metav1.Condition) bool { return c != nil && c.Status == metav1.ConditionTrue }

// sourceFailure tells the clone's failures apart: Flux gives most of them one reason
// (GitOperationFailed) and go-git's words in the message.
func sourceFailure(c *metav1.Condition) string {
	msg := strings.ToLower(c.Message)
	switch {
	case c.Reason == flux.AuthenticationFailedReason, strings.Contains(msg, "authentication required"),
		strings.Contains(msg, "authorization failed"):
		return ReasonCredentialRejected
	case strings.Contains(msg, "couldn't find remote ref"), strings.Contains(msg, "reference not found"):
		return ReasonBranchNotFound
	}
	return ReasonRepositoryUnreachable
}

// applyFailure names a Kustomization's failure.
func applyFailure(c *metav1.Condition) string {
	switch {
	case c.Reason == flux.ArtifactFailedReason && strings.Contains(c.Message, "kustomization path not found"):
		return ReasonPathNotFound
	case c.Reason == flux.BuildFailedReason:
		return ReasonBuildFailed
	}
	return ReasonApplyFailed
}
