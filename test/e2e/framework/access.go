package framework

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component"
)

// WaitTeamReady waits up to 30 s for the Team's Ready phase at its current generation.
func WaitTeamReady(t *testing.T, name string) *v1alpha1.Team {
	t.Helper()
	var got *v1alpha1.Team
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		tm, err := Plane.Butler.ButlerV1alpha1().Teams().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = tm
		return tm.Status.Phase == v1alpha1.TeamPhaseReady && tm.Status.ObservedGeneration == tm.Generation, nil
	})
	if err != nil {
		t.Fatalf("team %s not Ready: %v; status %+v", name, err, got.Status)
	}
	return got
}

// TeamManifest is a Team with the members (TeamMember's, or "group:" names) and the limits' YAML.
func TeamManifest(name, limits string, members ...string) string {
	var users, groups []string
	for _, m := range members {
		if g, ok := strings.CutPrefix(m, "group:"); ok {
			groups = append(groups, "    - "+g)
		} else {
			users = append(users, "    - "+m)
		}
	}
	s := fmt.Sprintf("apiVersion: butler.butlerlabs.dev/v1alpha1\nkind: Team\nmetadata:\n  name: %s\nspec:\n  access:\n", name)
	if len(users) > 0 {
		s += "    users:\n" + strings.Join(users, "\n") + "\n"
	}
	if len(groups) > 0 {
		s += "    groups:\n" + strings.Join(groups, "\n") + "\n"
	}
	return s + limits
}

// TeamMember renders "{name: N, role: R}" for TeamManifest, or a group with the "group:" prefix.
func TeamMember(name, role string) string { return fmt.Sprintf("{name: %s, role: %s}", name, role) }

// MintAs asks the subresource (kubeconfig or viewerkubeconfig) of a TenantCluster as user (by
// impersonation) and writes the answer's kubeconfig; it returns the file, the identity the
// answer names and kubectl's output and error.
func MintAs(t *testing.T, ns, name, subresource, user string) (path, identity, out string, err error) {
	t.Helper()
	p := strings.TrimSuffix(KubeconfigPath(ns, name), "kubeconfig") + subresource
	out, err = Kubectl(t, "--as", user, "create", "--raw", p, "-f", KubeconfigRequestFile(t, KubeconfigRequest))
	if err != nil {
		return "", "", out, err
	}
	var answer struct {
		Status struct {
			Kubeconfig string
			User       string
		}
	}
	if err := json.Unmarshal([]byte(out), &answer); err != nil {
		t.Fatalf("answer: %v\n%s", err, out)
	}
	data, _ := base64.StdEncoding.DecodeString(answer.Status.Kubeconfig)
	path = filepath.Join(t.TempDir(), user+"-"+subresource+".kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, answer.Status.User, out, nil
}

// TenantAdminKubeconfig writes the tenant's admin kubeconfig, the one butler's controllers and the local
// provider use (kubeadm's kubernetes-admin), from its Secret in the tenant namespace.
func TenantAdminKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	tc, err := Plane.Butler.ButlerV1alpha1().TenantClusters(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || tc.Status.KubeconfigSecretRef == nil {
		t.Fatalf("the TenantCluster's admin kubeconfig Secret: %v", err)
	}
	secret, err := Plane.Kube.CoreV1().Secrets(tc.Status.TenantNamespace).Get(context.Background(), tc.Status.KubeconfigSecretRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range component.ManagementKubeconfigKeys {
		if data := secret.Data[key]; len(data) > 0 {
			path := filepath.Join(t.TempDir(), "admin.kubeconfig")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	t.Fatalf("Secret %s/%s holds no kubeconfig", secret.Namespace, secret.Name)
	return ""
}

// MustKubectlAs runs kubectl with a kubeconfig and standard input, and fails the test if it fails.
func MustKubectlAs(t *testing.T, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	out, err := KubectlAs(t, kubeconfig, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// KubeconfigPath is the path of a TenantCluster's kubeconfig subresource.
func KubeconfigPath(ns, name string) string {
	return "/apis/butler.butlerlabs.dev/v1alpha1/namespaces/" + ns + "/tenantclusters/" + name + "/kubeconfig"
}

// KubeconfigRequestFile writes a KubeconfigRequest body for kubectl create --raw -f.
func KubeconfigRequestFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "request.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// KubeconfigRequest is an empty KubeconfigRequest body: the defaults.
const KubeconfigRequest = `{"apiVersion":"butler.butlerlabs.dev/v1alpha1","kind":"KubeconfigRequest"}`
