package addons

import (
	"context"
	"slices"
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// setProtected makes the unit engine's stand-in tenant mark the named namespaces protected.
func setProtected(e *Engine, namespaces ...string) {
	e.namespaceLabels = func(_ context.Context, _ Target, ns string) (map[string]string, error) {
		if slices.Contains(namespaces, ns) {
			return map[string]string{external.ProtectedNamespaceLabel: "true"}, nil
		}
		return nil, nil
	}
}

func setRenderDeadline(e *Engine, d time.Duration) { e.renderDeadline = d }
