package ipam

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// checkTree verifies the B-tree invariants: item order, node sizes, equal leaf depth, and n.
func checkTree(t *testing.T, tr *tree) {
	t.Helper()
	var items []span
	leafDepth := -1
	var walk func(n *node, depth int, root bool)
	walk = func(n *node, depth int, root bool) {
		if !root && (len(n.items) < minItems || len(n.items) > maxItems) {
			t.Fatalf("node with %d items", len(n.items))
		}
		if len(n.items) > maxItems {
			t.Fatalf("root with %d items", len(n.items))
		}
		if len(n.children) == 0 {
			if leafDepth == -1 {
				leafDepth = depth
			} else if leafDepth != depth {
				t.Fatalf("leaves at depths %d and %d", leafDepth, depth)
			}
			items = append(items, n.items...)
			return
		}
		if len(n.children) != len(n.items)+1 {
			t.Fatalf("node with %d items and %d children", len(n.items), len(n.children))
		}
		for i, c := range n.children {
			walk(c, depth+1, false)
			if i < len(n.items) {
				items = append(items, n.items[i])
			}
		}
	}
	if tr.root != nil {
		walk(tr.root, 0, true)
	}
	if len(items) != tr.n {
		t.Fatalf("tree holds %d items, n = %d", len(items), tr.n)
	}
	for i := 1; i < len(items); i++ {
		if !tr.ord.less(items[i-1], items[i]) {
			t.Fatalf("items out of order: %v then %v", items[i-1], items[i])
		}
	}
}

func treeItems(tr *tree) []span {
	var out []span
	tr.all(func(s span) bool { out = append(out, s); return true })
	return out
}

// refSet is a sorted slice standing in for a tree.
type refSet struct {
	ord   order
	items []span
}

func (r *refSet) cmp(a, b span) int {
	switch {
	case r.ord.less(a, b):
		return -1
	case r.ord.less(b, a):
		return 1
	}
	return 0
}

func (r *refSet) insert(x span) bool {
	i, found := slices.BinarySearchFunc(r.items, x, r.cmp)
	if found {
		return false
	}
	r.items = slices.Insert(r.items, i, x)
	return true
}

func (r *refSet) delete(x span) bool {
	i, found := slices.BinarySearchFunc(r.items, x, r.cmp)
	if found {
		r.items = slices.Delete(r.items, i, i+1)
	}
	return found
}

func TestTreeAgainstSortedSlice(t *testing.T) {
	for _, ord := range []order{byStart, bySize} {
		rng := rand.New(rand.NewPCG(1, uint64(ord)))
		var tr tree
		tr.init(ord)
		ref := &refSet{ord: ord}
		type snapshot struct {
			tr    *tree
			items []span
		}
		var snaps []snapshot
		for step := 0; step < 20000; step++ {
			lo := rng.Uint64N(3000)
			x := span{lo, lo + rng.Uint64N(8)}
			if ord == byStart {
				x.hi = lo // byStart trees are keyed by lo alone
			}
			switch op := rng.IntN(10); {
			case op < 5:
				if ref.insert(x) {
					tr.insert(x)
				}
			case op < 9:
				if got, want := tr.delete(x), ref.delete(x); got != want {
					t.Fatalf("delete(%v) = %v, want %v", x, got, want)
				}
			default:
				var c tree
				tr.cloneInto(&c)
				// Change the clone too: its changes must not reach the tree.
				cref := &refSet{ord: ord, items: slices.Clone(ref.items)}
				for k := 0; k < 50; k++ {
					y := span{rng.Uint64N(3000), 0}
					y.hi = y.lo
					if ord == bySize {
						y.hi += rng.Uint64N(8)
					}
					if rng.IntN(2) == 0 {
						if cref.insert(y) {
							c.insert(y)
						}
					} else if c.delete(y) != cref.delete(y) {
						t.Fatalf("clone delete(%v) disagrees", y)
					}
				}
				snaps = append(snaps, snapshot{&c, cref.items})
			}
			if step%500 == 0 {
				checkTree(t, &tr)
			}
			// Spot-check the searches against the reference.
			q := span{rng.Uint64N(3100), 0}
			q.hi = q.lo + rng.Uint64N(8)
			i, found := slices.BinarySearchFunc(ref.items, q, ref.cmp)
			if c, ok := tr.ceil(q); ok != (i < len(ref.items)) || (ok && c != ref.items[i]) {
				t.Fatalf("ceil(%v) = %v %v", q, c, ok)
			}
			fi := i - 1
			if found {
				fi = i
			}
			if f, ok := tr.floor(q); ok != (fi >= 0) || (ok && f != ref.items[fi]) {
				t.Fatalf("floor(%v) = %v %v", q, f, ok)
			}
			if g, ok := tr.get(q); ok != found || (ok && g != ref.items[i]) {
				t.Fatalf("get(%v) = %v %v", q, g, ok)
			}
		}
		checkTree(t, &tr)
		if got := treeItems(&tr); !slices.Equal(got, ref.items) {
			t.Fatalf("order %d: tree and reference differ", ord)
		}
		if m, ok := tr.max(); ok != (len(ref.items) > 0) || (ok && m != ref.items[len(ref.items)-1]) {
			t.Fatalf("max = %v", m)
		}
		// Every clone holds what the tree held when it was taken, plus its own changes only.
		for _, s := range snaps {
			checkTree(t, s.tr)
			if got := treeItems(s.tr); !slices.Equal(got, s.items) {
				t.Fatalf("order %d: a clone changed after the tree did", ord)
			}
		}
	}
}

func TestTreeAscendFrom(t *testing.T) {
	var tr tree
	tr.init(byStart)
	for i := uint64(0); i < 1000; i++ {
		tr.insert(span{i * 2, i * 2})
	}
	var got []uint64
	tr.ascend(span{lo: 1001}, func(s span) bool {
		got = append(got, s.lo)
		return len(got) < 3
	})
	if !slices.Equal(got, []uint64{1002, 1004, 1006}) {
		t.Fatalf("ascend from 1001 = %v", got)
	}
}

func TestTreeBuild(t *testing.T) {
	for n := 0; n < 3000; n += 1 + n/7 {
		items := make([]span, n)
		for i := range items {
			items[i] = span{uint64(i) * 3, uint64(i) * 3}
		}
		var tr tree
		tr.init(byStart)
		tr.build(items)
		checkTree(t, &tr)
		if got := treeItems(&tr); !slices.Equal(got, items) && n > 0 {
			t.Fatalf("build(%d items) holds other items", n)
		}
		// A built tree must take changes like any other.
		tr.insert(span{1, 1})
		tr.delete(span{0, 0})
		checkTree(t, &tr)
	}
}
