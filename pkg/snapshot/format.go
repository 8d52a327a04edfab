package snapshot

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
)

// magic opens every stream (after decompression), with the format's version.
const magic = "BUTLER-SNAPSHOT-1\n"

// maxFrame bounds a key or value read back: etcd's own request limit is far below it.
const maxFrame = 64 << 20

// Header describes a stream.
type Header struct {
	// Prefix is the tenant's key prefix at the source ("/<schema>/"); records hold keys relative to it.
	Prefix string `json:"prefix"`
	// Revision is the datastore revision every page was read at.
	Revision int64 `json:"revision"`
	// KubernetesVersion is the source cluster's.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// Record is one key.
type Record struct {
	Key   string // relative to the prefix
	Value []byte
	// Leased says the key was attached to a lease (kube-apiserver's Events and its own
	// endpoint lease): a restore attaches it to a new lease rather than keep it forever.
	Leased bool
}

// Stats is what a written stream holds.
type Stats struct {
	Revision int64
	Objects  int64
	Bytes    int64
	Checksum string
}

// Writer writes a stream to w, counting and hashing the compressed bytes.
type Writer struct {
	counted *countingHash
	gz      *gzip.Writer
	buf     *bufio.Writer
	objects int64
	rev     int64
	tmp     [binary.MaxVarintLen64]byte
}

// NewWriter starts a stream with its header.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	counted := &countingHash{w: w, h: sha256.New()}
	gz, _ := gzip.NewWriterLevel(counted, gzip.BestSpeed)
	sw := &Writer{counted: counted, gz: gz, buf: bufio.NewWriterSize(gz, 256<<10), rev: h.Revision}
	head, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if _, err := sw.buf.WriteString(magic); err != nil {
		return nil, err
	}
	return sw, sw.frame(head)
}

func (w *Writer) uvarint(v uint64) error {
	n := binary.PutUvarint(w.tmp[:], v)
	_, err := w.buf.Write(w.tmp[:n])
	return err
}

func (w *Writer) frame(b []byte) error {
	if err := w.uvarint(uint64(len(b))); err != nil {
		return err
	}
	_, err := w.buf.Write(b)
	return err
}

// Write adds a record.
func (w *Writer) Write(r Record) error {
	if r.Key == "" {
		return errors.New("a record needs a key")
	}
	if err := w.frame([]byte(r.Key)); err != nil {
		return err
	}
	var flags uint64
	if r.Leased {
		flags = 1
	}
	if err := w.uvarint(flags); err != nil {
		return err
	}
	if err := w.frame(r.Value); err != nil {
		return err
	}
	w.objects++
	return nil
}

// Close ends the stream (an empty key, then the record count) and returns its figures.
func (w *Writer) Close() (Stats, error) {
	if err := w.uvarint(0); err != nil {
		return Stats{}, err
	}
	if err := w.uvarint(uint64(w.objects)); err != nil {
		return Stats{}, err
	}
	if err := w.buf.Flush(); err != nil {
		return Stats{}, err
	}
	if err := w.gz.Close(); err != nil {
		return Stats{}, err
	}
	return Stats{Revision: w.rev, Objects: w.objects, Bytes: w.counted.n, Checksum: w.counted.sum()}, nil
}

// Reader reads a stream.
type Reader struct {
	r      *bufio.Reader
	gz     *gzip.Reader
	Header Header
	count  int64
	done   bool
}

// NewReader reads a stream's header.
func NewReader(r io.Reader) (*Reader, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not a snapshot stream: %w", err)
	}
	sr := &Reader{gz: gz, r: bufio.NewReaderSize(gz, 256<<10)}
	m := make([]byte, len(magic))
	if _, err := io.ReadFull(sr.r, m); err != nil || string(m) != magic {
		return nil, errors.New("not a snapshot stream (no header)")
	}
	head, err := sr.frame()
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(head, &sr.Header); err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	return sr, nil
}

func (r *Reader) frame() ([]byte, error) {
	n, err := binary.ReadUvarint(r.r)
	if err != nil {
		return nil, truncated(err)
	}
	if n > maxFrame {
		return nil, fmt.Errorf("snapshot stream: a frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		return nil, truncated(err)
	}
	return b, nil
}

// Next returns the next record, or io.EOF after the last (once the count matched).
func (r *Reader) Next() (Record, error) {
	if r.done {
		return Record{}, io.EOF
	}
	key, err := r.frame()
	if err != nil {
		return Record{}, err
	}
	if len(key) == 0 {
		n, err := binary.ReadUvarint(r.r)
		if err != nil {
			return Record{}, truncated(err)
		}
		if int64(n) != r.count {
			return Record{}, fmt.Errorf("snapshot stream: %d records, its trailer says %d", r.count, n)
		}
		r.done = true
		return Record{}, io.EOF
	}
	flags, err := binary.ReadUvarint(r.r)
	if err != nil {
		return Record{}, truncated(err)
	}
	value, err := r.frame()
	if err != nil {
		return Record{}, err
	}
	r.count++
	return Record{Key: string(key), Value: value, Leased: flags&1 != 0}, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// countingHash passes writes to w and counts and hashes them.
type countingHash struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

func (c *countingHash) sum() string { return "sha256:" + hex.EncodeToString(c.h.Sum(nil)) }

// ChecksumMismatchError says stored data is not what its snapshot recorded.
type ChecksumMismatchError struct{ Want, Got string }

func (e *ChecksumMismatchError) Error() string {
	return fmt.Sprintf("the snapshot's data does not match its checksum: recorded %s, the stored data has %s", e.Want, e.Got)
}

// Verify reads r to its end and checks its sha256 against want ("sha256:<hex>").
func Verify(r io.Reader, want string) (int64, error) {
	c := &countingHash{w: io.Discard, h: sha256.New()}
	n, err := io.Copy(c, r)
	if err != nil {
		return n, err
	}
	if got := c.sum(); got != want {
		return n, &ChecksumMismatchError{Want: want, Got: got}
	}
	return n, nil
}
