package datastore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/butlerdotdev/butler-apiserver/pkg/pki"
)

// EnableAuth turns etcd's authentication on with a root user that has no password (it
// authenticates by its client certificate's CN), once: a datastore with auth on is left alone.
func EnableAuth(ctx context.Context, root *clientv3.Client) error {
	status, err := root.Auth.AuthStatus(ctx)
	if err != nil {
		return fmt.Errorf("auth status: %w", err)
	}
	if status.Enabled {
		return nil
	}
	if _, err := root.Auth.UserAddWithOptions(ctx, RootUser, "", &clientv3.UserAddOptions{NoPassword: true}); err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("adding user root: %w", err)
	}
	if _, err := root.Auth.UserGrantRole(ctx, RootUser, "root"); err != nil {
		return fmt.Errorf("granting role root: %w", err)
	}
	if _, err := root.Auth.AuthEnable(ctx); err != nil {
		return fmt.Errorf("enabling auth: %w", err)
	}
	return nil
}

// Tenant is one tenant's place in a datastore: its etcd user (also its role's name) and the
// key prefix that user may read and write, "/<schema>/" (kube-apiserver's --etcd-prefix=/<schema>
// writes keys under it).
type Tenant struct {
	User   string
	Prefix string
}

// NewTenant is the tenant whose kube-apiserver runs with --etcd-prefix=/<schema>.
func NewTenant(user, schema string) Tenant {
	return Tenant{User: user, Prefix: "/" + strings.Trim(schema, "/") + "/"}
}

// EnsureTenant makes the tenant's role (readwrite on its prefix, nothing else) and its
// passwordless user with that role only. It is idempotent.
func EnsureTenant(ctx context.Context, root *clientv3.Client, t Tenant) error {
	if t.User == "" || t.User == RootUser || t.Prefix == "//" {
		return fmt.Errorf("tenant user %q with prefix %q is not a tenant", t.User, t.Prefix)
	}
	if _, err := root.Auth.RoleAdd(ctx, t.User); err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("adding role %s: %w", t.User, err)
	}
	role, err := root.Auth.RoleGet(ctx, t.User)
	if err != nil {
		return fmt.Errorf("reading role %s: %w", t.User, err)
	}
	end := clientv3.GetPrefixRangeEnd(t.Prefix)
	granted := false
	for _, p := range role.Perm {
		if string(p.Key) == t.Prefix && string(p.RangeEnd) == end && p.PermType == clientv3.PermReadWrite {
			granted = true
			continue
		}
		// Anything else on the role (a prefix of before) is taken away.
		if _, err := root.Auth.RoleRevokePermission(ctx, t.User, string(p.Key), string(p.RangeEnd)); err != nil {
			return fmt.Errorf("revoking %q from role %s: %w", p.Key, t.User, err)
		}
	}
	if !granted {
		if _, err := root.Auth.RoleGrantPermission(ctx, t.User, t.Prefix, end, clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
			return fmt.Errorf("granting %s to role %s: %w", t.Prefix, t.User, err)
		}
	}
	if _, err := root.Auth.UserAddWithOptions(ctx, t.User, "", &clientv3.UserAddOptions{NoPassword: true}); err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("adding user %s: %w", t.User, err)
	}
	user, err := root.Auth.UserGet(ctx, t.User)
	if err != nil {
		return fmt.Errorf("reading user %s: %w", t.User, err)
	}
	hasRole := false
	for _, r := range user.Roles {
		if r == t.User {
			hasRole = true
			continue
		}
		if _, err := root.Auth.UserRevokeRole(ctx, t.User, r); err != nil {
			return fmt.Errorf("revoking role %s from user %s: %w", r, t.User, err)
		}
	}
	if !hasRole {
		if _, err := root.Auth.UserGrantRole(ctx, t.User, t.User); err != nil {
			return fmt.Errorf("granting role %s: %w", t.User, err)
		}
	}
	return nil
}

// RemoveTenant deletes the tenant's keys, its user and its role, and says how many keys went.
// What is already gone is not an error.
func RemoveTenant(ctx context.Context, root *clientv3.Client, t Tenant) (int64, error) {
	if t.User == "" || t.User == RootUser || t.Prefix == "//" {
		return 0, fmt.Errorf("tenant user %q with prefix %q is not a tenant", t.User, t.Prefix)
	}
	resp, err := root.Delete(ctx, t.Prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("deleting %s: %w", t.Prefix, err)
	}
	if _, err := root.Auth.UserDelete(ctx, t.User); err != nil && !isNotFound(err) {
		return resp.Deleted, fmt.Errorf("deleting user %s: %w", t.User, err)
	}
	if _, err := root.Auth.RoleDelete(ctx, t.User); err != nil && !isNotFound(err) {
		return resp.Deleted, fmt.Errorf("deleting role %s: %w", t.User, err)
	}
	return resp.Deleted, nil
}

// ClientCertificate is the tenant's client certificate for the datastore, signed by its CA, in
// dir as <stem>.crt/.key (kept while it is still right).
func (c *Credentials) ClientCertificate(dir, stem string, t Tenant) (*pki.KeyPair, error) {
	return pki.EnsureLeaf(dir, stem, c.CA, pki.Request{CommonName: t.User, Usage: pki.ClientAuth})
}

func isAlreadyExists(err error) bool {
	return errors.Is(err, rpctypes.ErrUserAlreadyExist) || errors.Is(err, rpctypes.ErrRoleAlreadyExist)
}

func isNotFound(err error) bool {
	return errors.Is(err, rpctypes.ErrUserNotFound) || errors.Is(err, rpctypes.ErrRoleNotFound)
}
