package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3PartSize is the size of each uploaded part: a stream of unknown length is buffered one part
// at a time (minio-go would otherwise size parts for a 5 TiB object), so this bounds the memory
// an upload holds. S3's smallest part is 5 MiB.
const s3PartSize = 8 << 20

// S3 is a Store in a bucket of S3-compatible object storage: one object per snapshot, under
// Prefix. A stream is uploaded in parts as it is written and becomes visible only when the
// upload completes (a multipart upload is whole or absent).
type S3 struct {
	Client *minio.Client
	Bucket string
	Prefix string
}

var _ Store = &S3{}

// S3Config is where a bucket is and the keys that open it.
type S3Config struct {
	// Endpoint is http(s)://host[:port].
	Endpoint, Bucket, Prefix, Region string
	AccessKeyID, SecretAccessKey     string
	// Transport carries the requests; nil is minio-go's default.
	Transport http.RoundTripper
}

// NewS3 makes the store's client; it does not contact the server.
func NewS3(cfg S3Config) (*S3, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the S3 endpoint %q is not an http(s)://host[:port] URL", cfg.Endpoint)
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:    u.Scheme == "https",
		Region:    cfg.Region,
		Transport: cfg.Transport,
	})
	if err != nil {
		return nil, err
	}
	return &S3{Client: client, Bucket: cfg.Bucket, Prefix: cfg.Prefix}, nil
}

func (s *S3) key(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains("/"+name+"/", "/../") {
		return "", fmt.Errorf("snapshot name %q is not a relative clean path", name)
	}
	return s.Prefix + name + ".snap", nil
}

// Location is s3://bucket/key.
func (s *S3) Location(name string) string {
	k, err := s.key(name)
	if err != nil {
		return ""
	}
	return "s3://" + s.Bucket + "/" + k
}

// Create starts the upload; what is written streams to the server part by part.
func (s *S3) Create(ctx context.Context, name string) (Pending, error) {
	k, err := s.key(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r, w := io.Pipe()
	p := &s3Pending{w: w, cancel: cancel, done: make(chan error, 1)}
	go func() {
		_, err := s.Client.PutObject(ctx, s.Bucket, k, r, -1, minio.PutObjectOptions{
			PartSize: s3PartSize, ContentType: "application/octet-stream"})
		// Unblock a writer still waiting on a failed upload.
		_ = r.CloseWithError(errOr(err, io.ErrClosedPipe))
		p.done <- err
	}()
	return p, nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// Open reads the object; a missing one is an error here, not on the first read.
func (s *S3) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	k, err := s.key(name)
	if err != nil {
		return nil, err
	}
	obj, err := s.Client.GetObject(ctx, s.Bucket, k, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	if _, err := obj.Stat(); err != nil {
		_ = obj.Close()
		return nil, fmt.Errorf("reading %s: %w", s.Location(name), err)
	}
	return obj, nil
}

// Delete removes the object; S3 answers a missing one with success.
func (s *S3) Delete(ctx context.Context, name string) error {
	k, err := s.key(name)
	if err != nil {
		return err
	}
	return s.Client.RemoveObject(ctx, s.Bucket, k, minio.RemoveObjectOptions{})
}

type s3Pending struct {
	w      *io.PipeWriter
	cancel context.CancelFunc
	done   chan error
}

func (p *s3Pending) Write(b []byte) (int, error) { return p.w.Write(b) }

// Commit ends the stream and waits for the upload to complete.
func (p *s3Pending) Commit() error {
	_ = p.w.Close()
	err := <-p.done
	p.cancel()
	return err
}

// errAborted ends an upload that must not complete.
var errAborted = errors.New("snapshot upload aborted")

// Abort fails the upload, which minio-go then aborts on the server.
func (p *s3Pending) Abort() {
	_ = p.w.CloseWithError(errAborted)
	p.cancel()
	<-p.done //nolint:errcheck // the upload's error is the abort itself
}
