package validation

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// gitSchemes are the transports Flux's source-controller clones over.
var gitSchemes = sets.New("https", "http", "ssh")

// Bounds of a repository's branch (git's own limit on a ref is the file system's; Flux's
// GitRepository takes any string) and path.
const (
	gitBranchMaxLength = 255
	gitPathMaxLength   = 1024
)

// validateGitRepository checks spec.addons.gitops.repository as Flux will use it: a URL it can
// clone without credentials in it, a branch git accepts, a path inside the repository. Whether
// the URL may be reached and the Secret used is admission's (GitOpsSource): both depend on more
// than the object.
func validateGitRepository(repo *butler.GitRepository, fldPath *field.Path) field.ErrorList {
	allErrs := validateGitURL(repo.URL, fldPath.Child("url"))
	if repo.Branch != "" {
		allErrs = append(allErrs, validateGitBranch(repo.Branch, fldPath.Child("branch"))...)
	}
	if repo.Path != "" {
		allErrs = append(allErrs, validateGitPath(repo.Path, fldPath.Child("path"))...)
	}
	allErrs = append(allErrs, validateLocalRef(repo.SecretRef, utilvalidation.IsDNS1123Subdomain, fldPath.Child("secretRef"))...)
	if repo.SecretRef != nil && strings.HasPrefix(strings.ToLower(repo.URL), "http://") {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("secretRef"),
			"an http:// repository would receive the credential unencrypted: use https:// (a private CA goes in the Secret's ca.crt)"))
	}
	if repo.Interval != nil {
		allErrs = append(allErrs, validateGitInterval(repo.Interval.Duration, fldPath.Child("interval"))...)
	}
	return allErrs
}

// The bounds of spec.addons.gitops.repository.interval: below 10s every cluster's Flux would
// fetch (and butler read its status) several times a minute; above a day a commit waits too long
// to be applied to say it is GitOps.
const (
	minGitInterval = 10 * time.Second
	maxGitInterval = 24 * time.Hour
)

func validateGitInterval(d time.Duration, fldPath *field.Path) field.ErrorList {
	if d < minGitInterval || d > maxGitInterval {
		return field.ErrorList{field.Invalid(fldPath, d.String(), fmt.Sprintf("must be between %s and %s", minGitInterval, maxGitInterval))}
	}
	return nil
}

// validateGitURL requires an https, http or ssh URL with a host. A password or token in it would
// be stored in the spec, readable by every viewer of the Team: credentials go in secretRef.
func validateGitURL(s string, fldPath *field.Path) field.ErrorList {
	if errs := validateURL(s, gitSchemes, fldPath); len(errs) > 0 {
		if s != "" && !strings.Contains(s, "://") && strings.Contains(s, ":") {
			return field.ErrorList{field.Invalid(fldPath, s, "must be a "+schemeList(gitSchemes)+" URL (write git@host:path as ssh://git@host/path)")}
		}
		return errs
	}
	u, _ := url.Parse(s)
	if _, hasPassword := u.User.Password(); hasPassword || (u.User != nil && u.Scheme != "ssh") {
		return field.ErrorList{field.Invalid(fldPath, redactURL(u), "must not carry credentials: name a Secret in secretRef")}
	}
	if u.Fragment != "" || u.RawQuery != "" {
		return field.ErrorList{field.Invalid(fldPath, s, "must have no query or fragment: the branch is spec.addons.gitops.repository.branch")}
	}
	// url.Parse (and go-git with it) lowercases the scheme and takes "https://:443/" as a host;
	// Flux's GitRepository refuses the first and a dial of ":443" reaches the local system.
	if u.Hostname() == "" {
		return field.ErrorList{field.Invalid(fldPath, s, "must name a host (an empty one dials the local system)")}
	}
	if !strings.HasPrefix(s, u.Scheme+"://") {
		return field.ErrorList{field.Invalid(fldPath, s, "the scheme must be written in lower case, as Flux's GitRepository requires")}
	}
	return nil
}

// redactURL is the URL without its user information, fit for an error that is logged and shown.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// validateGitBranch applies git check-ref-format's rules to refs/heads/<branch>.
func validateGitBranch(b string, fldPath *field.Path) field.ErrorList {
	if len(b) > gitBranchMaxLength {
		return field.ErrorList{field.TooLong(fldPath, b, gitBranchMaxLength)}
	}
	why := ""
	switch {
	case strings.ContainsFunc(b, func(r rune) bool { return r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) }):
		why = "must not contain spaces, control characters or any of ~^:?*[\\"
	case strings.HasPrefix(b, "-"), strings.HasPrefix(b, "/"), strings.HasSuffix(b, "/"), strings.HasSuffix(b, "."):
		why = "must not begin with - or /, nor end with / or ."
	case strings.Contains(b, ".."), strings.Contains(b, "//"), strings.Contains(b, "@{"), b == "@":
		why = "must not contain .., //, @{ or be @"
	}
	for _, part := range strings.Split(b, "/") {
		if why == "" && (strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock")) {
			why = "no part may begin with . or end with .lock"
		}
	}
	if why != "" {
		return field.ErrorList{field.Invalid(fldPath, b, "not a valid git branch name: "+why)}
	}
	return nil
}

// validateGitPath requires a relative path that stays inside the repository ("./clusters/prod"
// or "clusters/prod"): Flux resolves it against the checkout's root.
func validateGitPath(p string, fldPath *field.Path) field.ErrorList {
	if len(p) > gitPathMaxLength {
		return field.ErrorList{field.TooLong(fldPath, p, gitPathMaxLength)}
	}
	switch {
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }):
		return field.ErrorList{field.Invalid(fldPath, p, "must not contain control characters or \\")}
	case strings.HasPrefix(p, "/"):
		return field.ErrorList{field.Invalid(fldPath, p, "must be relative to the repository's root")}
	case sets.New(strings.Split(p, "/")...).Has(".."):
		return field.ErrorList{field.Invalid(fldPath, p, "must stay inside the repository (no ..)")}
	}
	return nil
}

// ratchetGitRepository drops the errors of an unchanged spec.addons.gitops.repository: its rules
// came after the field (which did nothing then), and a cluster stored with a repository they
// refuse (git@host:path, a branch git would refuse) must still scale and upgrade. A changed
// repository meets them all.
func ratchetGitRepository(errs field.ErrorList, spec, old *butler.TenantClusterSpec) field.ErrorList {
	if !equality.Semantic.DeepEqual(gitRepositoryOf(spec), gitRepositoryOf(old)) || gitRepositoryOf(spec) == nil {
		return errs
	}
	kept := errs[:0]
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, "spec.addons.gitops.repository.") {
			kept = append(kept, e)
		}
	}
	return kept
}

func gitRepositoryOf(spec *butler.TenantClusterSpec) *butler.GitRepository {
	if spec.Addons.Gitops == nil {
		return nil
	}
	return spec.Addons.Gitops.Repository
}
