package steward

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Tenant is what one tenant holds in a shared etcd: its prefix (/<schema>/, Steward's
// status.storage.setup.schema) and its user and role (both named as status.storage.setup
// says: Steward names the role after the schema).
type Tenant struct{ Prefix, User, Role string }

// Trespasses tries, as tenant a's client, everything outside a's own prefix that another
// tenant's data or the datastore's access control would suffer from, and returns each that was
// not refused with etcd's "permission denied": with authentication off, every one of them. own
// is the error of reading a's own prefix, which must succeed (else a's client proves nothing).
func Trespasses(ctx context.Context, a *clientv3.Client, own, other Tenant) (trespasses []string, ownErr error) {
	if _, ownErr = a.Get(ctx, own.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); ownErr != nil {
		return nil, fmt.Errorf("reading its own prefix %s: %w", own.Prefix, ownErr)
	}
	end := clientv3.GetPrefixRangeEnd(other.Prefix)
	for _, try := range []struct {
		what string
		op   func() error
	}{
		{"read the other tenant's prefix " + other.Prefix, func() error {
			_, err := a.Get(ctx, other.Prefix, clientv3.WithPrefix())
			return err
		}},
		{"write into the other tenant's prefix", func() error { _, err := a.Put(ctx, other.Prefix+"registry/trespass", "a"); return err }},
		{"delete the other tenant's prefix", func() error {
			_, err := a.Delete(ctx, other.Prefix, clientv3.WithPrefix())
			return err
		}},
		{"read every key (from the root)", func() error { _, err := a.Get(ctx, "", clientv3.WithFromKey()); return err }},
		{"write a key at the root", func() error { _, err := a.Put(ctx, "/trespass", "a"); return err }},
		{"compact everyone's history", func() error { _, err := a.Compact(ctx, 1); return err }},
		{"grant its role the other tenant's prefix", func() error {
			_, err := a.RoleGrantPermission(ctx, own.Role, other.Prefix, end, clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		}},
		{"grant itself the root role", func() error { _, err := a.UserGrantRole(ctx, own.User, "root"); return err }},
		{"list the datastore's users", func() error { _, err := a.UserList(ctx); return err }},
	} {
		if err := try.op(); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			trespasses = append(trespasses, fmt.Sprintf("%s (%v)", try.what, err))
		}
	}
	return trespasses, nil
}
