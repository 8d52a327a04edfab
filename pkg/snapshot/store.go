package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Name is a TenantClusterSnapshot's name in a Store: its namespace, name and UID (a snapshot
// made again under the same name is another snapshot).
func Name(namespace, name, uid string) string { return namespace + "/" + name + "-" + uid }

// Store keeps snapshot streams by name (Name).
type Store interface {
	// Create starts a new stream; nothing is visible under name until Commit.
	Create(ctx context.Context, name string) (Pending, error)
	// Open reads a committed stream.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Delete removes a stream; a missing one is no error.
	Delete(ctx context.Context, name string) error
	// Location says where name is kept (a path or an URL), for status.
	Location(name string) string
}

// Pending is a stream being written.
type Pending interface {
	io.Writer
	// Commit makes the stream visible under its name, whole or not at all.
	Commit() error
	// Abort drops what was written.
	Abort()
}

// Dir is a Store in a directory: one file per snapshot, written to a temporary file, synced
// and renamed into place.
type Dir struct{ Root string }

var _ Store = Dir{}

func (d Dir) path(name string) (string, error) {
	clean := filepath.Clean(name)
	if name == "" || filepath.IsAbs(name) || clean != name || strings.HasPrefix(clean, "..") {
		return "", fmt.Errorf("snapshot name %q is not a relative clean path", name)
	}
	return filepath.Join(d.Root, clean+".snap"), nil
}

// Location is the file's path.
func (d Dir) Location(name string) string {
	p, err := d.path(name)
	if err != nil {
		return ""
	}
	return p
}

// Create opens a temporary file beside the final one.
func (d Dir) Create(_ context.Context, name string) (Pending, error) {
	p, err := d.path(name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(p), filepath.Base(p)+".tmp-*")
	if err != nil {
		return nil, err
	}
	return &dirPending{f: f, final: p}, nil
}

// Open opens the file.
func (d Dir) Open(_ context.Context, name string) (io.ReadCloser, error) {
	p, err := d.path(name)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// Delete removes the file.
func (d Dir) Delete(_ context.Context, name string) error {
	p, err := d.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

type dirPending struct {
	f     *os.File
	final string
}

func (p *dirPending) Write(b []byte) (int, error) { return p.f.Write(b) }

func (p *dirPending) Commit() error {
	if err := p.f.Sync(); err != nil {
		p.Abort()
		return err
	}
	if err := p.f.Close(); err != nil {
		_ = os.Remove(p.f.Name())
		return err
	}
	if err := os.Rename(p.f.Name(), p.final); err != nil {
		_ = os.Remove(p.f.Name())
		return err
	}
	// The rename is durable once the directory is.
	if dir, err := os.Open(filepath.Dir(p.final)); err == nil {
		_ = dir.Sync()
		_ = dir.Close()
	}
	return nil
}

func (p *dirPending) Abort() {
	_ = p.f.Close()
	_ = os.Remove(p.f.Name())
}
