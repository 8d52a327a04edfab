package localplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// fieldManager owns what the plane applies to its management cluster.
const fieldManager = "butler-localplane"

// kube is the plane's admin client of its own kube-apiserver.
type kube struct {
	rest      *rest.Config
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	ext       apiextensions.Interface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
}

func newKube(kubeconfig string) (*kube, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// The plane applies some sixty objects at once on start; the client's default 5/s would
	// make that the slowest step.
	cfg.QPS, cfg.Burst = 200, 400
	k := &kube{rest: cfg}
	if k.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if k.discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return nil, err
	}
	if k.ext, err = apiextensions.NewForConfig(cfg); err != nil {
		return nil, err
	}
	k.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(k.discovery))
	return k, nil
}

// readManifests reads the objects of the YAML (or JSON) files, several documents each.
func readManifests(files ...string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if len(m) > 0 {
				objs = append(objs, &unstructured.Unstructured{Object: m})
			}
		}
	}
	return objs, nil
}

// manifestsIn are the YAML and JSON files of dir, as kubectl apply -f dir reads them.
func manifestsIn(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil
}

// apply applies the objects server-side, taking over any field another manager set: server-side,
// as the largest CRDs are over the client-side apply annotation's limit.
func (k *kube) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		_, err = k.dynamic.Resource(m.Resource).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
	return nil
}

// applyFiles applies the objects of the files.
func (k *kube) applyFiles(ctx context.Context, files ...string) ([]*unstructured.Unstructured, error) {
	objs, err := readManifests(files...)
	if err != nil {
		return nil, err
	}
	return objs, k.apply(ctx, objs)
}

// lastApplied gives each object the annotation a client-side `kubectl apply` would have left:
// an admin (or a test) applying the same manifests with kubectl later then patches them without
// kubectl's warning that the annotation is missing.
func lastApplied(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	for _, obj := range objs {
		data, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[corev1.LastAppliedConfigAnnotation] = string(data) + "\n"
		obj.SetAnnotations(annotations)
	}
	return objs, nil
}

// applyDeclared applies the objects of the files as `kubectl apply` would (lastApplied).
func (k *kube) applyDeclared(ctx context.Context, files ...string) error {
	objs, err := readManifests(files...)
	if err != nil {
		return err
	}
	if objs, err = lastApplied(objs); err != nil {
		return err
	}
	return k.apply(ctx, objs)
}

// established says every CRD of objs is Established.
func (k *kube) established(ctx context.Context, objs []*unstructured.Unstructured) bool {
	for _, obj := range objs {
		crd, err := k.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil || !slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		}) {
			return false
		}
	}
	return true
}

// clusterAdmin binds user to cluster-admin: the local provider stands in for several providers'
// RBAC at once, and the Cluster API manager's ClusterRole is not copied here (local only).
func clusterAdmin(user string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": user},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}}
}

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// butlerAPIService is the APIService of artifacts/deploy/apiservice.yaml.
const butlerAPIService = "v1alpha1.butler.butlerlabs.dev"

// pointAPIService gives the APIService the local CA and butler-apiserver's port (its Service is
// an ExternalName for localhost).
func (k *kube) pointAPIService(ctx context.Context, caPEM []byte, port int) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"caBundle": caPEM, "service": map[string]any{"port": port}}})
	if err != nil {
		return err
	}
	_, err = k.dynamic.Resource(apiServices).Patch(ctx, butlerAPIService, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	return err
}

// apiServiceAvailable says the aggregator reaches butler-apiserver.
func (k *kube) apiServiceAvailable(ctx context.Context) bool {
	data, err := k.discovery.RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices", butlerAPIService).DoRaw(ctx)
	if err != nil {
		return false
	}
	var svc struct {
		Status struct{ Conditions []metav1.Condition } `json:"status"`
	}
	return json.Unmarshal(data, &svc) == nil && slices.ContainsFunc(svc.Status.Conditions, func(c metav1.Condition) bool {
		return c.Type == "Available" && c.Status == metav1.ConditionTrue
	})
}

var tenantClusters = schema.GroupVersionResource{Group: "butler.butlerlabs.dev", Version: "v1alpha1", Resource: "tenantclusters"}

// discoveryListsButler says discovery lists the butler resources.
func (k *kube) discoveryListsButler(context.Context) bool {
	list, err := k.discovery.ServerResourcesForGroupVersion(tenantClusters.GroupVersion().String())
	return err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == tenantClusters.Resource })
}

// listsTenantClusters says a List of tenantclusters through kube-apiserver answers.
func (k *kube) listsTenantClusters(ctx context.Context) bool {
	_, err := k.dynamic.Resource(tenantClusters).List(ctx, metav1.ListOptions{Limit: 1})
	return err == nil
}

// readyz says kube-apiserver is ready.
func (k *kube) readyz(ctx context.Context) bool {
	_, err := k.discovery.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

// httpOK says url answers 200 (etcd's /health, the Cluster API manager's /readyz).
func httpOK(url string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}
