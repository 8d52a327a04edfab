package addons

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
)

// ChartRef names a chart: where it comes from, its name and the version wanted.
type ChartRef struct {
	// Repository is an http(s):// repository URL (with an index.yaml), an oci:// registry
	// path, or a local directory for charts bundled with the platform.
	Repository string
	// Name is the chart's name in the repository (the last path element under oci://).
	Name string
	// Version is an exact version, a semver constraint, or empty for the newest.
	Version string
}

func (r ChartRef) String() string {
	v := r.Version
	if v == "" {
		v = "latest"
	}
	return fmt.Sprintf("%s/%s@%s", strings.TrimSuffix(r.Repository, "/"), r.Name, v)
}

// sourceKind is how a repository is read.
type sourceKind int

const (
	sourceHTTP sourceKind = iota
	sourceOCI
	sourceLocal
)

func kindOf(repository string) (sourceKind, error) {
	switch {
	case strings.HasPrefix(repository, "http://"), strings.HasPrefix(repository, "https://"):
		return sourceHTTP, nil
	case registry.IsOCI(repository):
		return sourceOCI, nil
	case strings.Contains(repository, "://"):
		return 0, fmt.Errorf("chart repository %q: only http(s)://, oci:// and local paths are supported", repository)
	default:
		return sourceLocal, nil
	}
}

// Charts finds and fetches charts, keeping the archives in a directory on disk.
type Charts struct {
	dir      string
	timeout  time.Duration
	policy   FetchPolicy
	client   *http.Client
	registry *registry.Client

	mu sync.Mutex
	// versions remembers what a version constraint resolved to, for a while, so an addon that
	// asks for "the newest" does not fetch an index on every look.
	versions map[string]resolvedVersion
	// fetching serializes fetches of one archive.
	fetching map[string]*sync.Mutex
}

type resolvedVersion struct {
	version string
	at      time.Time
}

// resolveTTL is how long a constraint's answer is reused before the index is read again.
const resolveTTL = 5 * time.Minute

// NewCharts returns a chart source that caches archives under dir (created if missing).
// timeout bounds each download; policy is what the downloads may reach and how large they
// may be, for repositories and OCI registries alike.
func NewCharts(dir string, timeout time.Duration, policy FetchPolicy) (*Charts, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	client := policy.Client(timeout)
	// The registry client's credentials file lives in the cache dir: never the user's own.
	reg, err := registry.NewClient(registry.ClientOptCredentialsFile(filepath.Join(dir, "registry-config.json")),
		registry.ClientOptEnableCache(true), registry.ClientOptHTTPClient(client))
	if err != nil {
		return nil, fmt.Errorf("helm registry client: %w", err)
	}
	return &Charts{dir: dir, timeout: timeout, policy: policy, client: client, registry: reg,
		versions: map[string]resolvedVersion{}, fetching: map[string]*sync.Mutex{}}, nil
}

// Resolve turns ref's version into the exact version to install. An exact version is taken as
// it is (no network); a constraint or an empty version asks the repository.
func (c *Charts) Resolve(ctx context.Context, ref ChartRef) (string, error) {
	if ref.Name == "" {
		return "", errors.New("chart name is empty")
	}
	kind, err := kindOf(ref.Repository)
	if err != nil {
		return "", err
	}
	if isExact(ref.Version) {
		return ref.Version, nil
	}
	key := ref.String()
	c.mu.Lock()
	if r, ok := c.versions[key]; ok && time.Since(r.at) < resolveTTL {
		c.mu.Unlock()
		return r.version, nil
	}
	c.mu.Unlock()

	var version string
	switch kind {
	case sourceHTTP:
		var entry *repo.ChartVersion
		entry, err = c.findInIndex(ctx, ref)
		if entry != nil {
			version = entry.Version
		}
	case sourceOCI:
		var tags []string
		tags, err = c.registry.Tags(ociRef(ref))
		if err != nil {
			err = fetchFailure(ctx, ref.Repository, err)
		} else {
			version, err = registry.GetTagMatchingVersionOrConstraint(tags, ref.Version)
		}
	case sourceLocal:
		var ch *chart.Chart
		ch, err = c.loadLocal(ref)
		if ch != nil {
			version = ch.Metadata.Version
		}
	}
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", ref, err)
	}
	c.mu.Lock()
	c.versions[key] = resolvedVersion{version: version, at: time.Now()}
	c.mu.Unlock()
	return version, nil
}

// Load returns the chart at ref's exact version (Resolve first), from the cache directory when
// it was fetched before.
func (c *Charts) Load(ctx context.Context, ref ChartRef) (*chart.Chart, error) {
	kind, err := kindOf(ref.Repository)
	if err != nil {
		return nil, err
	}
	if kind == sourceLocal {
		return c.loadLocal(ref)
	}
	if !isExact(ref.Version) {
		return nil, fmt.Errorf("chart %s: an exact version is needed to load a chart", ref)
	}
	path := c.archivePath(ref)
	lock := c.fetchLock(path)
	lock.Lock()
	defer lock.Unlock()
	if _, err := os.Stat(path); err != nil {
		switch kind {
		case sourceHTTP:
			err = c.fetchHTTP(ctx, ref, path)
		case sourceOCI:
			err = c.fetchOCI(ctx, ref, path)
		}
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", ref, err)
		}
	}
	ch, err := loadArchive(path)
	if err != nil {
		// A damaged archive is dropped so the next attempt fetches it again.
		_ = os.Remove(path)
		return nil, fmt.Errorf("chart %s: %w", ref, err)
	}
	if ch.Metadata.Name != ref.Name || ch.Metadata.Version != ref.Version {
		_ = os.Remove(path)
		return nil, fmt.Errorf("chart %s: the archive holds %s %s", ref, ch.Metadata.Name, ch.Metadata.Version)
	}
	return ch, nil
}

// fetchHTTP downloads the archive the repository's index names for ref into path, checked
// against the index's digest.
func (c *Charts) fetchHTTP(ctx context.Context, ref ChartRef, path string) error {
	entry, err := c.findInIndex(ctx, ref)
	if err != nil {
		return err
	}
	if len(entry.URLs) == 0 {
		return fmt.Errorf("the index has no URL for version %s", entry.Version)
	}
	u, err := repo.ResolveReferenceURL(ref.Repository, entry.URLs[0])
	if err != nil {
		return err
	}
	tmp, sum, err := c.download(ctx, u)
	if err != nil {
		return err
	}
	if entry.Digest != "" && !strings.EqualFold(sum, entry.Digest) {
		os.Remove(tmp)
		return fmt.Errorf("%s: digest %s, the index says %s", u, sum, entry.Digest)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("chart cache: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("chart cache: %w", err)
	}
	return nil
}

// download streams url under the fetch policy into a new file of the cache directory (gone
// again on error) and returns its path and the body's sha256: bodies go to disk as they
// come, so memory does not grow with the download.
func (c *Charts) download(ctx context.Context, url string) (path, sum string, err error) {
	f, err := os.CreateTemp(c.dir, ".fetch-*")
	if err != nil {
		return "", "", fmt.Errorf("chart cache: %w", err)
	}
	h := sha256.New()
	err = c.policy.fetchTo(ctx, c.client, url, io.MultiWriter(f, h))
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("chart cache: %w", cerr)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", "", err
	}
	return f.Name(), hex.EncodeToString(h.Sum(nil)), nil
}

// findInIndex reads the repository's index.yaml and picks the version ref asks for. The index
// is parsed for this one look and not kept: a large public index is tens of megabytes parsed.
func (c *Charts) findInIndex(ctx context.Context, ref ChartRef) (*repo.ChartVersion, error) {
	indexURL := strings.TrimSuffix(ref.Repository, "/") + "/index.yaml"
	path, _, err := c.download(ctx, indexURL)
	if err != nil {
		return nil, err
	}
	defer os.Remove(path)
	index, err := repo.LoadIndexFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", indexURL, err)
	}
	entry, err := index.Get(ref.Name, ref.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", indexURL, err)
	}
	return entry, nil
}

// fetchOCI pulls ref's chart from its registry into path. Helm's registry client holds the
// archive in memory; the fetch policy's client bounds each blob at the limit.
func (c *Charts) fetchOCI(ctx context.Context, ref ChartRef, path string) error {
	res, err := c.registry.Pull(ociRef(ref)+":"+strings.ReplaceAll(ref.Version, "+", "_"), registry.PullOptWithChart(true))
	if err != nil {
		return fetchFailure(ctx, ref.Repository, err)
	}
	if err := writeAtomic(path, res.Chart.Data); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	return nil
}

// loadLocal loads a bundled chart: <repository>/<name> (a chart directory) or
// <repository>/<name>-<version>.tgz. A version, when given, must match the chart's.
func (c *Charts) loadLocal(ref ChartRef) (*chart.Chart, error) {
	candidates := []string{filepath.Join(ref.Repository, ref.Name)}
	if isExact(ref.Version) {
		candidates = append([]string{filepath.Join(ref.Repository, ref.Name+"-"+ref.Version+".tgz")}, candidates...)
	}
	var lastErr error
	for _, p := range candidates {
		if _, err := os.Stat(p); err != nil {
			lastErr = err
			continue
		}
		ch, err := loadLocalChart(p)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", ref, err)
		}
		if ref.Version != "" {
			ok, err := versionMatches(ch.Metadata.Version, ref.Version)
			if err != nil {
				return nil, fmt.Errorf("chart %s: %w", ref, err)
			}
			if !ok {
				lastErr = fmt.Errorf("%s has version %s", p, ch.Metadata.Version)
				continue
			}
		}
		return ch, nil
	}
	return nil, fmt.Errorf("chart %s: not found in the local path: %w", ref, lastErr)
}

// loadLocalChart loads a bundled chart: a directory as Helm does, an archive within the budgets.
func loadLocalChart(p string) (*chart.Chart, error) {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return loader.LoadDir(p)
	}
	return loadArchive(p)
}

// Evict drops ref's archive from the cache, and what a version constraint of its chart resolved
// to, so the next Load fetches it again: a chart that failed to load or render is not kept.
func (c *Charts) Evict(ref ChartRef) {
	if kind, err := kindOf(ref.Repository); err != nil || kind == sourceLocal {
		return
	}
	path := c.archivePath(ref)
	lock := c.fetchLock(path)
	lock.Lock()
	_ = os.Remove(path)
	lock.Unlock()
	prefix := fmt.Sprintf("%s/%s@", strings.TrimSuffix(ref.Repository, "/"), ref.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.versions {
		if strings.HasPrefix(key, prefix) {
			delete(c.versions, key)
		}
	}
}

func (c *Charts) archivePath(ref ChartRef) string {
	sum := sha256.Sum256([]byte(strings.TrimSuffix(ref.Repository, "/")))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:8]), ref.Name+"-"+ref.Version+".tgz")
}

func (c *Charts) fetchLock(path string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.fetching[path]
	if !ok {
		l = &sync.Mutex{}
		c.fetching[path] = l
	}
	return l
}

// ociRef is the registry reference of ref's chart, without a tag.
func ociRef(ref ChartRef) string {
	return strings.TrimPrefix(strings.TrimSuffix(ref.Repository, "/"), "oci://") + "/" + ref.Name
}

// isExact says whether v names one version rather than a range.
func isExact(v string) bool {
	if v == "" {
		return false
	}
	_, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	return err == nil
}

func versionMatches(have, want string) (bool, error) {
	if have == want {
		return true, nil
	}
	c, err := semver.NewConstraint(want)
	if err != nil {
		return false, err
	}
	v, err := semver.NewVersion(have)
	if err != nil {
		return false, err
	}
	return c.Check(v), nil
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fetch-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
