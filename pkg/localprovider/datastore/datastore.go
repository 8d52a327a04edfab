// Package datastore is what a control plane provider does with a Steward (or Kamaji) DataStore
// of driver etcd: read it (endpoints, the CA that signs its clients, the root client
// certificate, all through Secrets or inline content, as the CRD says), connect as root, and
// give each tenant its own etcd user, a role with readwrite on the tenant's key prefix only, and
// a client certificate whose common name is that user (etcd's --client-cert-auth takes a client
// certificate's CN as its user). Deleting a tenant deletes its keys, its user and its role.
// It also places a tenant on the datastore with the fewest tenants below its limit, and
// compacts a datastore's history, which tenants cannot do (etcd does not scope Compact per
// user). The local provider uses it for the datastores it runs; a remote Steward reads the same
// objects.
package datastore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/external/steward"
	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// GVR is Steward's cluster-scoped DataStore.
var GVR = external.DataStoreGVR

// APIVersion and Kind are the DataStore's.
var (
	APIVersion = external.DataStoreGVK.GroupVersion().String()
	Kind       = external.DataStoreGVK.Kind
)

const (
	// DriverEtcd is the only driver this package serves.
	DriverEtcd = "etcd"
	// MaxTenantsAnnotation on a DataStore bounds how many tenants placement puts on it (the
	// provider's default applies without it). Steward's CRD has no field for it.
	MaxTenantsAnnotation = external.DataStoreMaxTenantsAnnotation
	// RootUser is etcd's root user, the datastore owner's identity (its client certificate's CN).
	RootUser = "root"
)

// Ref is where a DataStore keeps one file: inline content or a Secret key.
type Ref struct {
	Content                     []byte
	SecretNamespace, SecretName string
	SecretKey                   string
}

// Spec is the part of a DataStore a provider reads.
type Spec struct {
	Name      string
	Driver    string
	Endpoints []string
	// CACert and CAKey are the CA that signs the datastore's serving certificate and its clients'.
	CACert, CAKey Ref
	// ClientCert and ClientKey are the root client certificate.
	ClientCert, ClientKey Ref
	// MaxTenants is the annotation's limit, 0 when it has none.
	MaxTenants int
}

// Parse reads a DataStore object.
func Parse(u *unstructured.Unstructured) (Spec, error) {
	s := Spec{Name: u.GetName()}
	ds, err := external.FromUnstructured[steward.DataStore](u)
	if err != nil {
		return s, err
	}
	s.Driver, s.Endpoints = ds.Spec.Driver, ds.Spec.Endpoints
	if s.Driver != DriverEtcd {
		return s, fmt.Errorf("DataStore %s: driver %q, only %q is served", s.Name, s.Driver, DriverEtcd)
	}
	if len(s.Endpoints) == 0 {
		return s, fmt.Errorf("DataStore %s has no endpoints", s.Name)
	}
	tlsConfig := ptr.Deref(ds.Spec.TLSConfig, steward.DataStoreTLSConfig{})
	ca := ptr.Deref(tlsConfig.CertificateAuthority, steward.CertKeyPair{})
	client := ptr.Deref(tlsConfig.ClientCertificate, steward.CertKeyPair{})
	for _, f := range []struct {
		ref  *Ref
		from *steward.ContentRef
		path string
	}{
		{&s.CACert, ca.Certificate, "certificateAuthority.certificate"},
		{&s.CAKey, ca.PrivateKey, "certificateAuthority.privateKey"},
		{&s.ClientCert, client.Certificate, "clientCertificate.certificate"},
		{&s.ClientKey, client.PrivateKey, "clientCertificate.privateKey"},
	} {
		if *f.ref, err = refOf(f.from); err != nil {
			return s, fmt.Errorf("DataStore %s: spec.tlsConfig.%s: %w", s.Name, f.path, err)
		}
	}
	if v := u.GetAnnotations()[MaxTenantsAnnotation]; v != "" {
		if s.MaxTenants, err = strconv.Atoi(v); err != nil || s.MaxTenants < 0 {
			return s, fmt.Errorf("DataStore %s: annotation %s: %q is not a count", s.Name, MaxTenantsAnnotation, v)
		}
	}
	return s, nil
}

// refOf is where one file of the DataStore is: its inline content, else a Secret's key.
func refOf(c *steward.ContentRef) (Ref, error) {
	if c == nil {
		return Ref{}, errors.New("missing")
	}
	if len(c.Content) > 0 {
		return Ref{Content: c.Content}, nil
	}
	sr := ptr.Deref(c.SecretReference, steward.KeySecretReference{})
	r := Ref{SecretNamespace: sr.Namespace, SecretName: sr.Name, SecretKey: sr.KeyPath}
	if r.SecretName == "" || r.SecretKey == "" {
		return Ref{}, errors.New("neither content nor a secretReference with name and keyPath")
	}
	return r, nil
}

// SecretReader reads one key of a Secret.
type SecretReader func(ctx context.Context, namespace, name, key string) ([]byte, error)

// Credentials are what a provider holds of a datastore: its CA (to sign tenants' client
// certificates and trust its serving certificate) and its root client certificate.
type Credentials struct {
	Spec Spec
	CA   *pki.KeyPair
	Root *pki.KeyPair
}

// Load reads the CA and the root client certificate a Spec points at.
func Load(ctx context.Context, s Spec, read SecretReader) (*Credentials, error) {
	get := func(r Ref) ([]byte, error) {
		if r.Content != nil {
			return r.Content, nil
		}
		data, err := read(ctx, r.SecretNamespace, r.SecretName, r.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("Secret %s/%s key %s: %w", r.SecretNamespace, r.SecretName, r.SecretKey, err)
		}
		return data, nil
	}
	var files [4][]byte
	for i, r := range []Ref{s.CACert, s.CAKey, s.ClientCert, s.ClientKey} {
		var err error
		if files[i], err = get(r); err != nil {
			return nil, fmt.Errorf("DataStore %s: %w", s.Name, err)
		}
	}
	ca, err := pki.Parse(files[0], files[1])
	if err != nil {
		return nil, fmt.Errorf("DataStore %s: the CA: %w", s.Name, err)
	}
	root, err := pki.Parse(files[2], files[3])
	if err != nil {
		return nil, fmt.Errorf("DataStore %s: the client certificate: %w", s.Name, err)
	}
	return &Credentials{Spec: s, CA: ca, Root: root}, nil
}

// TLSConfig is a client TLS configuration that trusts the datastore's CA and presents kp.
func (c *Credentials) TLSConfig(kp *pki.KeyPair) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.CA.Cert)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// URLs are the datastore's client URLs (the DataStore lists bare host:port).
func (c *Credentials) URLs() []string {
	urls := make([]string, len(c.Spec.Endpoints))
	for i, e := range c.Spec.Endpoints {
		urls[i] = "https://" + e
	}
	return urls
}

// Connect is an etcd client of the datastore as kp's user (root with c.Root).
func (c *Credentials) Connect(kp *pki.KeyPair) (*clientv3.Client, error) {
	tlsConfig, err := c.TLSConfig(kp)
	if err != nil {
		return nil, err
	}
	return clientv3.New(clientv3.Config{Endpoints: c.URLs(), TLS: tlsConfig, DialTimeout: 5 * time.Second})
}
