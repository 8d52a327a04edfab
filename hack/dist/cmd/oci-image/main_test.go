package main

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// build runs the assembler on two fake binaries (and the extra flags) into dir and returns the
// layout's index.json.
func build(t *testing.T, dir string, bins map[string]string, extra ...string) []byte {
	t.Helper()
	args := append(extra, "--out", filepath.Join(dir, "layout"), "--archive", filepath.Join(dir, "image.tar"),
		"--repository", "example.test/butler-apiserver", "--tag", "v1.2.3", "--created", "1700000000")
	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		args = append(args, "--binary", platform+"="+bins[platform])
	}
	o, err := parseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(o, io.Discard); err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(dir, "layout", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	return index
}

func TestSameInputsSameDigests(t *testing.T) {
	src := t.TempDir()
	bins := map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		p := filepath.Join(src, arch, "butler-apiserver")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		bins["linux/"+arch] = p
	}
	// A chart directory, copied into every image (--dir).
	chart := filepath.Join(src, "charts", "demo")
	if err := os.MkdirAll(filepath.Join(chart, "templates"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"Chart.yaml": "name: demo\n", "templates/cm.yaml": "kind: ConfigMap\n"} {
		if err := os.WriteFile(filepath.Join(chart, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dir := "--dir=" + chart + "=/usr/share/butler/charts/demo"
	a, b := t.TempDir(), t.TempDir()
	if first, second := build(t, a, bins, dir), build(t, b, bins, dir); string(first) != string(second) {
		t.Fatalf("two builds of the same binaries differ:\n%s\n%s", first, second)
	}
	archiveA, _ := os.ReadFile(filepath.Join(a, "image.tar"))
	archiveB, _ := os.ReadFile(filepath.Join(b, "image.tar"))
	if string(archiveA) != string(archiveB) {
		t.Fatal("the two archives differ")
	}

	// One image per platform, each running as 65532 with the binary, users, roots and /tmp.
	idx, err := layout.ImageIndexFromPath(filepath.Join(a, "layout"))
	if err != nil {
		t.Fatal(err)
	}
	outer, err := idx.IndexManifest()
	if err != nil || len(outer.Manifests) != 1 {
		t.Fatalf("layout index: %v %v", outer, err)
	}
	if got := outer.Manifests[0].Annotations["io.containerd.image.name"]; got != "example.test/butler-apiserver:v1.2.3" {
		t.Errorf("containerd name %q", got)
	}
	inner, err := idx.ImageIndex(outer.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("want 2 platforms, got %d", len(im.Manifests))
	}
	for _, desc := range im.Manifests {
		img, err := inner.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != desc.Platform.Architecture || cf.Config.User != "65532:65532" ||
			cf.Config.Entrypoint[0] != "/usr/local/bin/butler-apiserver" || cf.Created.Unix() != 1700000000 {
			t.Errorf("%s: config %+v", desc.Platform, cf)
		}
		files := map[string]*tar.Header{}
		contents := map[string]string{}
		layers, _ := img.Layers()
		for _, l := range layers {
			rc, err := l.Compressed()
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(rc)
			if err != nil {
				t.Fatal(err)
			}
			tr := tar.NewReader(zr)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if h.ModTime.Unix() != 1700000000 {
					t.Errorf("%s has time %v", h.Name, h.ModTime)
				}
				data, _ := io.ReadAll(tr)
				files[h.Name], contents[h.Name] = h, string(data)
			}
			rc.Close()
		}
		if h := files["tmp/"]; h == nil || h.Mode != 0o1777 {
			t.Errorf("/tmp: %+v", h)
		}
		if !strings.Contains(contents["etc/passwd"], "nonroot:x:65532:65532:") {
			t.Errorf("passwd: %q", contents["etc/passwd"])
		}
		if n := strings.Count(contents["etc/ssl/certs/ca-certificates.crt"], "BEGIN CERTIFICATE"); n < 100 {
			t.Errorf("CA bundle has %d certificates", n)
		}
		if got := contents["usr/local/bin/butler-apiserver"]; got != "binary for "+desc.Platform.Architecture {
			t.Errorf("binary %q", got)
		}
		// The copied files are readable by the non-root user whatever their mode in the build.
		if h := files["usr/share/butler/charts/demo/templates/cm.yaml"]; h == nil || h.Mode != 0o644 || h.Uid != 0 ||
			contents[h.Name] != "kind: ConfigMap\n" {
			t.Errorf("the copied template: %+v", h)
		}
		if h := files["usr/share/butler/charts/demo/templates/"]; h == nil || h.Mode != 0o755 || h.Typeflag != tar.TypeDir {
			t.Errorf("the copied directory: %+v", h)
		}
	}
}
