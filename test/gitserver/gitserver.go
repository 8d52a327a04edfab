// Package gitserver is a Git server for tests: bare repositories served over HTTPS by Debian's
// git (`git http-backend`, the smart HTTP protocol) behind net/http/cgi, with HTTP basic
// authentication and a CA of its own, as a Team's private Git server would be. Commits are made
// with git on a working clone and pushed to the bare repository through the file system.
package gitserver

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// Server serves the bare repositories under Dir, each at /<name>.git.
type Server struct {
	// Dir holds the bare repositories.
	Dir string
	// Username and Password are the only credential the server accepts.
	Username, Password string
	// CA is the PEM certificate of the CA that signed the serving certificate (a Flux Secret's
	// ca.crt).
	CA []byte

	git     string
	tls     *tls.Config
	servers []*http.Server
}

// New makes a server for dir whose serving certificate names ips and dnsNames; git must be
// installed (hack/install-cluster-deps.sh installs it).
func New(dir string, ips []net.IP, dnsNames []string) (*Server, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("git is not installed (hack/install-cluster-deps.sh installs it): %w", err)
	}
	ca, err := pki.NewCA("gitserver-ca")
	if err != nil {
		return nil, err
	}
	serving, err := ca.Issue(pki.Request{CommonName: "gitserver", IPs: ips, DNSNames: dnsNames, Usage: pki.ServerAuth})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		return nil, err
	}
	return &Server{
		Dir: dir, Username: "flux", Password: "git-" + randomHex(), CA: ca.CertPEM, git: git,
		tls: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}, nil
}

// Serve serves HTTPS on l until Close (it returns at once). A test may call it with several
// listeners, such as one in each real node's network namespace.
func (s *Server) Serve(l net.Listener) {
	srv := &http.Server{Handler: s, TLSConfig: s.tls}
	s.servers = append(s.servers, srv)
	go func() { _ = srv.Serve(tls.NewListener(l, s.tls)) }()
}

// Close stops every Serve.
func (s *Server) Close() {
	for _, srv := range s.servers {
		_ = srv.Close()
	}
}

// ServeHTTP refuses a request without the credential (401 with a challenge, as Git servers
// answer, so a client sends it) and hands the others to git http-backend.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, password, ok := r.BasicAuth()
	if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(s.Username)) != 1 ||
		subtle.ConstantTimeCompare([]byte(password), []byte(s.Password)) != 1 {
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	h := &cgi.Handler{
		Path: s.git, Args: []string{"http-backend"}, Root: "/",
		// Only fetches: receive-pack needs REMOTE_USER, which is not set, so pushes are refused.
		Env: []string{"GIT_PROJECT_ROOT=" + s.Dir, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + s.Dir},
	}
	h.ServeHTTP(w, r)
}

// Repository is a bare repository of the server and a working clone to commit in.
type Repository struct {
	Bare, Work, Branch string
}

// Init makes the bare repository <name>.git with branch as its default, and its working clone.
func (s *Server) Init(name, branch string) (*Repository, error) {
	r := &Repository{Bare: filepath.Join(s.Dir, name+".git"), Work: filepath.Join(s.Dir, name+".work"), Branch: branch}
	if _, err := Git(s.Dir, "init", "-q", "--bare", "-b", branch, r.Bare); err != nil {
		return nil, err
	}
	if _, err := Git(s.Dir, "init", "-q", "-b", branch, r.Work); err != nil {
		return nil, err
	}
	if _, err := Git(r.Work, "remote", "add", "origin", r.Bare); err != nil {
		return nil, err
	}
	return r, nil
}

// Commit writes files (path relative to the repository: content; an empty content removes the
// file), commits them with message and pushes; it returns the commit's full hash.
func (r *Repository) Commit(files map[string]string, message string) (string, error) {
	for path, content := range files {
		full := filepath.Join(r.Work, path)
		if content == "" {
			if err := os.Remove(full); err != nil {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", message}, {"push", "-q", "origin", r.Branch}} {
		if _, err := Git(r.Work, args...); err != nil {
			return "", err
		}
	}
	return Git(r.Work, "rev-parse", "HEAD")
}

// Git runs git in dir with a fixed identity and no user or system configuration, and returns
// its trimmed output.
func Git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	return strings.TrimSpace(out.String()), nil
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
