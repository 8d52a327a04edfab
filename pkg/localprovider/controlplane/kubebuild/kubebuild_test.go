package kubebuild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A part of k8s.io/kubernetes v1.30.2's go.mod: a replace block naming staging modules, and
// replaces that are not staging.
const kubeGoMod = `module k8s.io/kubernetes

go 1.22.0

require (
	k8s.io/api v0.0.0
	k8s.io/client-go v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apiextensions-apiserver => ./staging/src/k8s.io/apiextensions-apiserver
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	k8s.io/legacy-cloud-providers => ./staging/src/k8s.io/legacy-cloud-providers
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/example/fork => github.com/example/fork v1.2.3
)

replace k8s.io/kms => ./staging/src/k8s.io/kms
`

func TestWrapperGoMod(t *testing.T) {
	got, err := wrapperGoMod("v1.30.2", []byte(kubeGoMod))
	if err != nil {
		t.Fatal(err)
	}
	want := `module localprovider.local/kube

go 1.22.0

require k8s.io/kubernetes v1.30.2

replace (
	k8s.io/api => k8s.io/api v0.30.2
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.30.2
	k8s.io/client-go => k8s.io/client-go v0.30.2
	k8s.io/kms => k8s.io/kms v0.30.2
	k8s.io/legacy-cloud-providers => k8s.io/legacy-cloud-providers v0.30.2
)
`
	if string(got) != want {
		t.Errorf("wrapper go.mod:\n%s\nwant:\n%s", got, want)
	}
	if _, err := wrapperGoMod("v1.30.2", []byte("module k8s.io/kubernetes\n")); err == nil {
		t.Error("a go.mod without staging modules gave a wrapper")
	}
	if _, err := wrapperGoMod("latest", []byte(kubeGoMod)); err == nil {
		t.Error("a non-release version gave a wrapper")
	}
}

func TestUnbuildable(t *testing.T) {
	for v, ok := range map[string]bool{"v1.30.2": true, "v1.36.3": true, "v1.20.0": false, "1.30.2": false, "v1.30": false, "v2.0.0": false, "v1.30.2-rc.0": false} {
		if msg := unbuildable(v); (msg == "") != ok {
			t.Errorf("unbuildable(%q) = %q", v, msg)
		}
	}
}

func TestVersionsGet(t *testing.T) {
	bin := t.TempDir()
	for _, c := range []string{APIServer, ControllerManager} {
		writeScript(t, filepath.Join(bin, c))
	}
	v := NewVersions("v1.36.3", bin, t.TempDir(), func(string) {})
	if _, state, msg := v.Get("v1.36.3"); state != Failed || !strings.Contains(msg, "hack/build-kube.sh") {
		t.Errorf("pinned version without kube-scheduler: %v %q", state, msg)
	}
	writeScript(t, filepath.Join(bin, Scheduler))
	if b, state, _ := v.Get("v1.36.3"); state != Ready || b.Path(Scheduler) != filepath.Join(bin, Scheduler) {
		t.Errorf("pinned version: %v %v", b, state)
	}
	if _, state, msg := v.Get("v1.2.3"); state != Failed || !strings.Contains(msg, "older") {
		t.Errorf("v1.2.3: %v %q", state, msg)
	}
	// Another version is queued (the builder is not running here) and says so.
	if _, state, msg := v.Get("v1.30.2"); state != Building || !strings.Contains(msg, "waiting to build") {
		t.Errorf("v1.30.2: %v %q", state, msg)
	}
	if _, _, _ = v.Get("v1.30.2"); len(v.pending) != 1 {
		t.Errorf("asking twice queued %d builds", len(v.pending))
	}
	// Built binaries in the versions directory are used as they are.
	built := filepath.Join(v.dir, "v1.31.0", "bin")
	if err := os.MkdirAll(built, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{APIServer, ControllerManager, Scheduler} {
		writeScript(t, filepath.Join(built, c))
	}
	if b, state, _ := v.Get("v1.31.0"); state != Ready || b.dir != built {
		t.Errorf("built v1.31.0: %v %v", b, state)
	}
}

// TestBuildVersions: versions already built are left alone (nothing is run), and a version this
// provider cannot build is refused before anything is built.
func TestBuildVersions(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "v1.30.1", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{APIServer, ControllerManager, Scheduler} {
		if err := os.WriteFile(filepath.Join(bin, c), []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := BuildVersions(context.Background(), dir, []string{"v1.30.1"}); err != nil {
		t.Errorf("a built version: %v", err)
	}
	err := BuildVersions(context.Background(), dir, []string{"v1.30.1", "v1.20.0"})
	if err == nil || !strings.Contains(err.Error(), "older than v1.29") {
		t.Errorf("v1.20.0: %v, want a refusal naming the oldest version built here", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "v1.20.0")); !os.IsNotExist(err) {
		t.Errorf("something was made for v1.20.0 (%v)", err)
	}
}

// TestBuildRelativeDir: a relative versions directory (make kube-versions passes
// _output/kube-versions) gets its binaries in <dir>/<version>/bin, not under the build's own
// working directory, and they are built without cgo (the Steward images have no libc). The go
// command is a script that answers as go would and writes CGO_ENABLED into each "binary".
func TestBuildRelativeDir(t *testing.T) {
	work := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(work, "cache"))
	fakeGo := writeFakeGo(t, work)
	t.Chdir(work)
	v := NewVersions("", "", "kube-versions", nil)
	v.goCmd = fakeGo
	if err := v.build(context.Background(), "v1.30.2"); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "kube-versions", "v1.30.2", "bin")
	if !(Binaries{dir: bin}).Complete() {
		entries, _ := os.ReadDir(bin)
		t.Fatalf("%s is not complete: %v", bin, entries)
	}
	got, err := os.ReadFile(filepath.Join(bin, APIServer))
	if err != nil || !strings.HasPrefix(string(got), "CGO_ENABLED=0\n") {
		t.Errorf("kube-apiserver built with %q (%v), want CGO_ENABLED=0", got, err)
	}
}

// TestBuildKeepsLinksInTheCache: a second build of the same inputs in another versions directory
// (a clean clone) copies the binaries from the user's cache instead of linking; another go
// version, or BUTLER_KUBE_CACHE=off, links again.
func TestBuildKeepsLinksInTheCache(t *testing.T) {
	work := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(work, "cache"))
	fakeGo := writeFakeGo(t, work)
	links := func() int {
		data, _ := os.ReadFile(filepath.Join(work, "links"))
		return strings.Count(string(data), "\n")
	}
	build := func(clone string) []byte {
		t.Helper()
		v := NewVersions("", "", filepath.Join(work, clone), nil)
		v.goCmd = fakeGo
		if err := v.build(context.Background(), "v1.30.2"); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(work, clone, "v1.30.2", "bin", APIServer))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := build("a")
	if second := build("b"); links() != 1 || string(second) != string(first) {
		t.Errorf("second clone: %d links, binary %q, want 1 link and the first's %q", links(), second, first)
	}
	if err := os.WriteFile(filepath.Join(work, "goversion"), []byte("go1.99.0"), 0o644); err != nil {
		t.Fatal(err)
	}
	build("c")
	if links() != 2 {
		t.Errorf("another go version: %d links, want 2", links())
	}
	t.Setenv("BUTLER_KUBE_CACHE", "off")
	build("d")
	if links() != 3 {
		t.Errorf("BUTLER_KUBE_CACHE=off: %d links, want 3", links())
	}
}

// writeFakeGo writes a go command into work that answers as go would for a build, without
// building: go env answers with work/goversion's content (go1.26.0 when absent), and each "binary"
// holds the build's CGO_ENABLED and a line is added to work/links per link.
func writeFakeGo(t *testing.T, work string) string {
	t.Helper()
	kubeMod := filepath.Join(work, "kubernetes.mod")
	if err := os.WriteFile(kubeMod, []byte(kubeGoMod), 0o644); err != nil {
		t.Fatal(err)
	}
	fakeGo := filepath.Join(work, "go")
	script := `#!/bin/sh
case "$1 $2" in
"mod download") echo '{"GoMod":"` + kubeMod + `"}' ;;
"mod tidy") ;;
"env GOVERSION") cat ` + work + `/goversion 2>/dev/null || echo go1.26.0; echo linux; echo amd64 ;;
*) while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
   echo link >>` + work + `/links
   for c in kube-apiserver kube-controller-manager kube-scheduler; do
     printf 'CGO_ENABLED=%s\n%s\n' "$CGO_ENABLED" "$(date +%s%N)" >"$out$c" && chmod +x "$out$c"
   done ;;
esac
`
	if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return fakeGo
}

// writeScript writes an empty shell script at path, standing for a built binary.
func writeScript(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
