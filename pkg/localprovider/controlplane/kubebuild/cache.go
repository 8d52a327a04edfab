package kubebuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// linkCache keeps built binaries in the user's cache, as Go's build cache keeps compiled
// packages: Go caches no linked command, so every clean clone (each CI run) linked the same three
// binaries again, 20-40 s a version. An entry is named by the digest of everything the link
// reads besides the module cache's immutable sources (cacheKey), so a change of any of them
// builds again. BUTLER_KUBE_CACHE=off builds every time.
type linkCache struct{ dir, key string }

// cacheDir is <user cache>/butler-apiserver/kube-versions, or "" (no cache).
func cacheDir() string {
	if os.Getenv("BUTLER_KUBE_CACHE") == "off" {
		return ""
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "butler-apiserver", "kube-versions")
}

// cacheKey digests the wrapper module as tidied in src (go.mod, go.sum and the tools file: the
// versions of every module linked), the link flags and the go command's version and target.
func cacheKey(src, ldflags string, goEnv []byte) string {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum", "tools.go"} {
		data, _ := os.ReadFile(filepath.Join(src, name)) // a missing go.sum digests as empty
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	fmt.Fprintf(h, "CGO_ENABLED=0 -trimpath -ldflags %s\n%s", ldflags, goEnv)
	return hex.EncodeToString(h.Sum(nil))
}

func (c linkCache) entry() string { return filepath.Join(c.dir, c.key) }

// restore copies the entry's binaries into dir and says whether it could.
func (c linkCache) restore(dir string) bool {
	if c.dir == "" || !(Binaries{dir: c.entry()}).Complete() {
		return false
	}
	for _, name := range []string{APIServer, ControllerManager, Scheduler} {
		if err := copyFile(filepath.Join(c.entry(), name), filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	now := time.Now()
	_ = os.Chtimes(c.entry(), now, now) // used: prune keeps it
	return true
}

// cacheUnusedFor is how long an entry stays unused before a store removes it.
const cacheUnusedFor = 30 * 24 * time.Hour

// store copies the binaries in dir into a new entry (whole or not at all) and removes entries
// unused for cacheUnusedFor.
func (c linkCache) store(dir string) error {
	if c.dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(c.dir, ".new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{APIServer, ControllerManager, Scheduler} {
		if err := copyFile(filepath.Join(dir, name), filepath.Join(tmp, name)); err != nil {
			return err
		}
	}
	_ = os.RemoveAll(c.entry())
	if err := os.Rename(tmp, c.entry()); err != nil {
		return err
	}
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > cacheUnusedFor {
			_ = os.RemoveAll(filepath.Join(c.dir, e.Name()))
		}
	}
	return nil
}

// copyFile copies an executable.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
