package datastore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A restore replaces a tenant's data in one step: it writes the snapshot into a fresh prefix that
// no kube-apiserver reads, then switches the tenant's kube-apiserver to it and deletes the rest
// (package controlplane). Those prefixes are generations inside the tenant's prefix, "<root>~<n>/"
// (generation 0 is root itself): the role's range covers them, and kube-apiserver never writes a
// key whose next byte after its --etcd-prefix is "~" (resource and group names are lowercase DNS
// names), so the generations under root never mix with generation 0's objects.
const generationMark = "~"

// Generation is generation n's prefix under the tenant prefix root.
func Generation(root string, n int) string {
	if n == 0 {
		return root
	}
	return root + generationMark + strconv.Itoa(n) + "/"
}

// GenerationOf says which generation of root prefix is; false when it is none (another tenant's
// prefix, or root's after a change of schema).
func GenerationOf(root, prefix string) (int, bool) {
	if prefix == root {
		return 0, true
	}
	rest, ok := strings.CutPrefix(prefix, root+generationMark)
	if !ok {
		return 0, false
	}
	digits, ok := strings.CutSuffix(rest, "/")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil || n <= 0 || strconv.Itoa(n) != digits {
		return 0, false
	}
	return n, true
}

// RootOf is the tenant prefix a generation's prefix is under (a generation 0 prefix is its own).
func RootOf(prefix string) string {
	if i := strings.LastIndex(prefix, "/"+generationMark); i >= 0 {
		if _, ok := GenerationOf(prefix[:i+1], prefix); ok {
			return prefix[:i+1]
		}
	}
	return prefix
}

// ObjectsEnd is the end of the key range of the objects a kube-apiserver keeps under prefix: the
// generations under it are not among them.
func ObjectsEnd(prefix string) string { return prefix + generationMark }

// KeepOnly deletes, in one transaction, everything under the tenant prefix root except the
// objects of its generation keep: the data a switch to keep left behind, and what an abandoned
// restore wrote. It says how many keys went.
func KeepOnly(ctx context.Context, c *clientv3.Client, root, keep string) (int64, error) {
	if _, ok := GenerationOf(root, keep); !ok || !strings.HasPrefix(root, "/") || !strings.HasSuffix(root, "/") || len(root) < 3 {
		return 0, fmt.Errorf("%q is not a generation of the tenant prefix %q", keep, root)
	}
	ops := []clientv3.Op{clientv3.OpDelete(ObjectsEnd(keep), clientv3.WithRange(clientv3.GetPrefixRangeEnd(root)))}
	if keep != root {
		ops = append(ops, clientv3.OpDelete(root, clientv3.WithRange(keep)))
	}
	resp, err := c.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, err
	}
	var deleted int64
	for _, r := range resp.Responses {
		deleted += r.GetResponseDeleteRange().Deleted
	}
	return deleted, nil
}
