// Package kubebuild finds the binaries of a Kubernetes version for the local provider's tenant
// control planes: the pinned version's in --bin-dir, any other built from the module proxy on
// first use (a wrapper module requiring k8s.io/kubernetes with every staging module replaced),
// one build at a time, into --kube-versions-dir/<version>.
package kubebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// The commands a version's binaries hold: a tenant control plane's components.
const (
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
)

// Binaries is where one Kubernetes version's control-plane commands are.
type Binaries struct{ dir string }

// Path is the command component (APIServer, ControllerManager or Scheduler).
func (b Binaries) Path(component string) string { return filepath.Join(b.dir, component) }

// Complete says whether the three commands are there and executable.
func (b Binaries) Complete() bool {
	for _, c := range []string{APIServer, ControllerManager, Scheduler} {
		if info, err := os.Stat(b.Path(c)); err != nil || info.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// State is where a version's binaries stand.
type State int

const (
	Ready State = iota
	Building
	Failed
)

// Versions finds the binaries of a Kubernetes version: the pinned version's in binDir, any other
// built from the module proxy into dir/<version>/bin on first use, one build at a time.
type Versions struct {
	pinned string
	binDir string
	dir    string
	// goCmd is the go command (tests replace it).
	goCmd string
	// built is called when a build ends, with its version.
	built func(version string)

	mu      sync.Mutex
	failed  map[string]string // version -> why it cannot be built
	pending []string          // versions waiting to be built, in order
	current string            // the version being built
	wake    chan struct{}
}

// NewVersions finds pinned in binDir and builds others into dir; built is called when a build
// ends.
func NewVersions(pinned, binDir, dir string, built func(string)) *Versions {
	return &Versions{pinned: pinned, binDir: binDir, dir: dir, goCmd: "go", built: built,
		failed: map[string]string{}, wake: make(chan struct{}, 1)}
}

// versionPattern is what a buildable version looks like.
var versionPattern = regexp.MustCompile(`^v1\.(\d+)\.(\d+)$`)

// Oldest minor built here: older k8s.io/kubernetes releases do not build with this Go.
const oldestMinor = 29

// Get returns the binaries of version, or where their build stands and why.
func (v *Versions) Get(version string) (Binaries, State, string) {
	if version == v.pinned {
		b := Binaries{dir: v.binDir}
		if !b.Complete() {
			return b, Failed, fmt.Sprintf("the binaries of %s are missing from %s; run hack/build-kube.sh", version, v.binDir)
		}
		return b, Ready, ""
	}
	b := Binaries{dir: filepath.Join(v.dir, version, "bin")}
	if b.Complete() {
		return b, Ready, ""
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if msg, ok := v.failed[version]; ok {
		return b, Failed, msg
	}
	if msg := unbuildable(version); msg != "" {
		v.failed[version] = msg
		return b, Failed, msg
	}
	if v.current != version && !contains(v.pending, version) {
		v.pending = append(v.pending, version)
		select {
		case v.wake <- struct{}{}:
		default:
		}
	}
	if v.current == version {
		return b, Building, fmt.Sprintf("building kube-apiserver, kube-controller-manager and kube-scheduler %s from the module proxy (minutes; log in %s)", version, filepath.Join(v.dir, version, "build.log"))
	}
	return b, Building, fmt.Sprintf("waiting to build %s (%d builds queued before it)", version, v.queuedBefore(version))
}

func (v *Versions) queuedBefore(version string) int {
	n := 0
	if v.current != "" {
		n++
	}
	for _, p := range v.pending {
		if p == version {
			break
		}
		n++
	}
	return n
}

// unbuildable says why version cannot be built here, or "".
func unbuildable(version string) string {
	m := versionPattern.FindStringSubmatch(version)
	if m == nil {
		return fmt.Sprintf("%q is not a Kubernetes release version (v1.<minor>.<patch>)", version)
	}
	minor, _ := strconv.Atoi(m[1]) // digits: the pattern matched
	if minor < oldestMinor {
		return fmt.Sprintf("%s is older than v1.%d, the oldest this local provider builds", version, oldestMinor)
	}
	return ""
}

// Run builds the queued versions one at a time until ctx is done.
func (v *Versions) Run(ctx context.Context) {
	for {
		v.mu.Lock()
		if len(v.pending) > 0 {
			v.current, v.pending = v.pending[0], v.pending[1:]
		}
		version := v.current
		v.mu.Unlock()
		if version != "" {
			err := v.build(ctx, version)
			v.mu.Lock()
			v.current = ""
			if err != nil && ctx.Err() == nil {
				v.failed[version] = err.Error()
			}
			v.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
			v.built(version)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-v.wake:
		}
	}
}

// build makes dir/<version>/bin through a wrapper module: k8s.io/kubernetes cannot be required
// as it is (its go.mod replaces the staging modules with local paths), so the wrapper replaces
// each of them with its published v0.<minor>.<patch>.
func (v *Versions) build(ctx context.Context, version string) error {
	logger := klog.FromContext(ctx).WithValues("version", version)
	started := time.Now()
	// Absolute: go runs in src, and a relative output path would land under it (make
	// kube-versions passes _output/kube-versions, and bin stayed empty).
	root, err := filepath.Abs(filepath.Join(v.dir, version))
	if err != nil {
		return err
	}
	src := filepath.Join(root, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(root, "build.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	logger.Info("Building Kubernetes from the module proxy", "log", logFile.Name())
	goCmd := func(env []string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, v.goCmd, args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = logFile
		fmt.Fprintf(logFile, "$ go %s\n", strings.Join(args, " "))
		err := cmd.Run()
		if err != nil {
			return out.Bytes(), fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, lastLines(logFile.Name(), 5))
		}
		return out.Bytes(), nil
	}
	// The checksum database does not know some staging versions here; the module proxy does.
	noSum := []string{"GOSUMDB=off", "GOFLAGS=-mod=mod"}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module localprovider.local/kube\n\ngo 1.22.0\n"), 0o644); err != nil {
		return err
	}
	out, err := goCmd(noSum, "mod", "download", "-json", "k8s.io/kubernetes@"+version)
	// go mod download -json says what went wrong in its JSON, on standard output.
	var dl struct{ GoMod, Error string }
	_ = json.Unmarshal(out, &dl)
	if err != nil || dl.GoMod == "" {
		fmt.Fprintln(logFile, dl.Error)
		return fmt.Errorf("k8s.io/kubernetes %s cannot be downloaded from the module proxy: %s", version, orDefault(dl.Error, fmt.Sprint(err)))
	}
	kubeGoMod, err := os.ReadFile(dl.GoMod)
	if err != nil {
		return err
	}
	goMod, err := wrapperGoMod(version, kubeGoMod)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), goMod, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "tools.go"), []byte(wrapperTools), 0o644); err != nil {
		return err
	}
	if _, err := goCmd(noSum, "mod", "tidy"); err != nil {
		return err
	}
	bin := filepath.Join(root, "bin")
	tmp := bin + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	m := versionPattern.FindStringSubmatch(version)
	ldflags := fmt.Sprintf("-s -w -X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=%s -X k8s.io/component-base/version.gitTreeState=clean", version, m[1])
	goEnv, err := goCmd(nil, "env", "GOVERSION", "GOOS", "GOARCH")
	if err != nil {
		return err
	}
	cache := linkCache{dir: cacheDir(), key: cacheKey(src, ldflags, goEnv)}
	if cache.restore(tmp) {
		logger.Info("Copied Kubernetes from the cache", "cache", cache.entry(), "took", time.Since(started).Round(time.Second))
	} else {
		// Static (no cgo), as Kubernetes' own release binaries are: hack/build-steward.sh puts these
		// same binaries into the images a Steward-hosted control plane runs, which have no libc.
		if _, err := goCmd([]string{"CGO_ENABLED=0"}, "build", "-trimpath", "-ldflags", ldflags, "-o", tmp+"/",
			"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-scheduler"); err != nil {
			return err
		}
		if err := cache.store(tmp); err != nil {
			logger.Info("Not kept in the cache", "err", err)
		}
		logger.Info("Built Kubernetes", "took", time.Since(started).Round(time.Second))
	}
	_ = os.RemoveAll(bin)
	return os.Rename(tmp, bin)
}

const wrapperTools = `//go:build tools

// Package kube pins the Kubernetes commands the local provider builds for this version.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
`

// stagingReplace matches a staging replace of k8s.io/kubernetes' go.mod, in a replace block
// ("k8s.io/api => ./staging/src/k8s.io/api") or on its own line.
var stagingReplace = regexp.MustCompile(`(?m)^\s*(?:replace\s+)?(k8s\.io/[A-Za-z0-9._-]+)\s*=>\s*\./staging/src/k8s\.io/[A-Za-z0-9._-]+\s*$`)

// wrapperGoMod is the go.mod of a module that requires k8s.io/kubernetes at version and replaces
// each staging module its go.mod names with the published v0.<minor>.<patch>.
func wrapperGoMod(version string, kubeGoMod []byte) ([]byte, error) {
	m := versionPattern.FindStringSubmatch(version)
	if m == nil {
		return nil, fmt.Errorf("%q is not a Kubernetes release version", version)
	}
	staging := fmt.Sprintf("v0.%s.%s", m[1], m[2])
	var mods []string
	for _, r := range stagingReplace.FindAllSubmatch(kubeGoMod, -1) {
		if !contains(mods, string(r[1])) {
			mods = append(mods, string(r[1]))
		}
	}
	if len(mods) == 0 {
		return nil, errors.New("k8s.io/kubernetes' go.mod names no staging modules")
	}
	sort.Strings(mods)
	var b strings.Builder
	fmt.Fprintf(&b, "module localprovider.local/kube\n\ngo 1.22.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", version)
	for _, mod := range mods {
		fmt.Fprintf(&b, "\t%s => %s %s\n", mod, mod, staging)
	}
	b.WriteString(")\n")
	return []byte(b.String()), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lastLines is the end of a file, for an error message.
func lastLines(name string, n int) string {
	data, _ := os.ReadFile(name)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// BuildCommand is the first argument that makes butler-localprovider build Kubernetes versions
// into a versions directory and exit: the same build as on first use, run ahead of time (make
// builds the versions the e2e tests use once per run, outside any test's time limit).
const BuildCommand = "build-kube"

// BuildVersions builds each of the versions not yet in dir, one after another.
func BuildVersions(ctx context.Context, dir string, versions []string) error {
	v := NewVersions("", "", dir, nil)
	for _, version := range versions {
		if (Binaries{dir: filepath.Join(dir, version, "bin")}).Complete() {
			continue
		}
		if msg := unbuildable(version); msg != "" {
			return errors.New(msg)
		}
		if err := v.build(ctx, version); err != nil {
			return fmt.Errorf("building %s (log in %s): %w", version, filepath.Join(dir, version, "build.log"), err)
		}
	}
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
