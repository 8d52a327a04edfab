package main

import (
	"strings"
	"testing"
)

// flux2's base names the release files by URL; they become the local copies of the
// controller's config, and the version they name is returned. Anything else remote is refused.
func TestLocalResources(t *testing.T) {
	base := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- https://github.com/fluxcd/source-controller/releases/download/v1.9.5/source-controller.crds.yaml
- https://github.com/fluxcd/source-controller/releases/download/v1.9.5/source-controller.deployment.yaml
- account.yaml
`
	out, version, err := LocalResources([]byte(base), "source-controller")
	if err != nil || version != "v1.9.5" || !strings.Contains(string(out), "- crd\n- manager\n- account.yaml\n") || strings.Contains(string(out), "https://") {
		t.Fatalf("%s %s %v", out, version, err)
	}
	for _, bad := range []string{
		strings.Replace(base, "download/v1.9.5/source-controller.deployment", "download/v1.9.4/source-controller.deployment", 1),
		strings.Replace(base, "account.yaml", "https://example.com/evil.yaml", 1),
		"resources:\n- account.yaml\n",
	} {
		if _, _, err := LocalResources([]byte(bad), "source-controller"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// The events address (the notification-controller, not installed) goes; other arguments stay.
func TestDropEventsAddress(t *testing.T) {
	stream := "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        args:\n        - --events-addr=http://notification-controller.flux-system.svc.cluster.local./\n        - --watch-all-namespaces\n"
	out, err := DropEventsAddress([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); strings.Contains(s, "events-addr") || !strings.Contains(s, "- --watch-all-namespaces") || !strings.HasPrefix(s, "apiVersion: v1\nkind: Service\n") {
		t.Errorf("%s", s)
	}
}
