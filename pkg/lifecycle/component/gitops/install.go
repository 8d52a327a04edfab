package gitops

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

//go:embed flux.yaml
var fluxYAML []byte

// Controllers are the Deployments of flux.yaml, in flux-system: what removing spec.addons.gitops
// removes (the CRDs and the namespace stay: deleting a CRD deletes every object of it).
var Controllers = []string{"source-controller", "kustomize-controller"}

// Install is what the step applies into a tenant before the repository's objects, in order:
// flux.yaml (flux-system labelled protected, so no Team operator holds anything there; the CRDs;
// the two controllers), then the ServiceAccount the Kustomization applies as, bound to
// cluster-admin (only the Team's admin may set the repository: docs/concepts/gitops.md).
// The objects are copies of one decoding of flux.yaml (150 KB, read at every look otherwise).
func Install() ([]*unstructured.Unstructured, error) {
	objs, err := installed()
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out, nil
}

var installed = sync.OnceValues(decodeInstall)

// NamespaceOf is flux-system as objs (Install's) has it, labelled protected; nil without it.
func NamespaceOf(objs []*unstructured.Unstructured) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == "Namespace" && o.GetName() == Namespace {
			return o
		}
	}
	return nil
}

func decodeInstall() ([]*unstructured.Unstructured, error) {
	objs, err := decode(fluxYAML)
	if err != nil {
		return nil, fmt.Errorf("flux.yaml: %w", err)
	}
	if ns := NamespaceOf(objs); ns != nil {
		labels := ns.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[external.ProtectedNamespaceLabel] = "true"
		ns.SetLabels(labels)
	}
	account, err := toUnstructured(&rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: objectMeta().Labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: Namespace}},
	}, "ClusterRoleBinding")
	if err != nil {
		return nil, err
	}
	sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount"}}
	meta := objectMeta()
	sa.SetName(meta.Name)
	sa.SetNamespace(meta.Namespace)
	sa.SetLabels(meta.Labels)
	return append(objs, sa, account), nil
}

// decode splits a multi-document YAML stream into objects.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}
