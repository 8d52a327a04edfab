package validation

import (
	"strings"
	"testing"

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
