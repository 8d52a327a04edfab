package ipam

import "sync/atomic"

// The allocator keeps its free runs and allocations in B-trees of spans: O(log n) to find,
// insert and delete, and copy-on-write so that Clone is O(1) and a clone's first changes
// copy only the few nodes on the paths they touch. The scheme follows github.com/google/btree:
// every node records the copy-on-write context of the tree that made it; a tree changes a
// node in place only when the node carries its own context and otherwise copies it first.
// Clone gives the original and the copy fresh contexts, so all existing nodes become shared
// and read-only for both.

const (
	btreeDegree = 16
	maxItems    = 2*btreeDegree - 1 // a full node; it is split before an insert goes below it
	minItems    = btreeDegree - 1   // the fewest items a node other than the root holds
)

// order is how a tree sorts its spans.
type order uint8

const (
	byStart order = iota // by lo: free runs and allocations in address order
	bySize               // by size, then lo: free runs for best fit
)

func (o order) less(a, b span) bool {
	if o == bySize {
		// hi-lo rather than size() so that no comparison overflows.
		if sa, sb := a.hi-a.lo, b.hi-b.lo; sa != sb {
			return sa < sb
		}
	}
	return a.lo < b.lo
}

// cowCtx identifies the tree allowed to change a node in place. It is not zero-sized so
// that each new one has its own address.
type cowCtx struct{ _ byte }

type node struct {
	items    []span
	children []*node // empty in a leaf, len(items)+1 otherwise
	cow      *cowCtx
}

// tree is a B-tree of distinct spans. It must not be copied; use clone. Reads may run
// concurrently with one another and with clone; changes need exclusive access.
type tree struct {
	root *node
	n    int
	ord  order
	// cow is atomic because clone replaces it while other goroutines may be cloning or
	// reading the same tree.
	cow atomic.Pointer[cowCtx]
}

func (t *tree) init(o order) {
	t.ord = o
	t.cow.Store(new(cowCtx))
}

// cloneInto makes dst a copy of t that shares all of t's nodes.
func (t *tree) cloneInto(dst *tree) {
	t.cow.Store(new(cowCtx))
	dst.root, dst.n, dst.ord = t.root, t.n, t.ord
	dst.cow.Store(new(cowCtx))
}

func (t *tree) len() int { return t.n }

func newNode(c *cowCtx) *node { return &node{cow: c, items: make([]span, 0, maxItems)} }

func (n *node) mutableFor(c *cowCtx) *node {
	if n.cow == c {
		return n
	}
	out := &node{cow: c, items: make([]span, len(n.items), maxItems)}
	copy(out.items, n.items)
	if len(n.children) > 0 {
		out.children = make([]*node, len(n.children), maxItems+1)
		copy(out.children, n.children)
	}
	return out
}

func (n *node) mutableChild(i int) *node {
	c := n.children[i].mutableFor(n.cow)
	n.children[i] = c
	return c
}

// find returns the index of the first item not less than x and whether that item equals x.
func (n *node) find(o order, x span) (int, bool) {
	lo, hi := 0, len(n.items)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if o.less(n.items[m], x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(n.items) && !o.less(x, n.items[lo])
}

// split moves the items after i (and their children) to a new node and returns item i,
// which the caller lifts into the parent.
func (n *node) split(i int) (span, *node) {
	item := n.items[i]
	next := newNode(n.cow)
	next.items = append(next.items, n.items[i+1:]...)
	n.items = n.items[:i]
	if len(n.children) > 0 {
		next.children = append(make([]*node, 0, maxItems+1), n.children[i+1:]...)
		clear(n.children[i+1:])
		n.children = n.children[:i+1]
	}
	return item, next
}

// maybeSplitChild splits child i if it is full, so that an insert below it cannot overflow.
func (n *node) maybeSplitChild(i int) bool {
	if len(n.children[i].items) < maxItems {
		return false
	}
	first := n.mutableChild(i)
	item, second := first.split(maxItems / 2)
	n.items = insertAt(n.items, i, item)
	n.children = insertAt(n.children, i+1, second)
	return true
}

func insertAt[T any](s []T, i int, x T) []T {
	var zero T
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = x
	return s
}

func removeAt[T any](s []T, i int) ([]T, T) {
	x := s[i]
	copy(s[i:], s[i+1:])
	var zero T
	s[len(s)-1] = zero
	return s[:len(s)-1], x
}

// insert adds x, which must not be in the tree.
func (t *tree) insert(x span) {
	c := t.cow.Load()
	if t.root == nil {
		t.root = newNode(c)
	}
	t.root = t.root.mutableFor(c)
	if len(t.root.items) >= maxItems {
		item, second := t.root.split(maxItems / 2)
		old := t.root
		t.root = newNode(c)
		t.root.items = append(t.root.items, item)
		t.root.children = append(make([]*node, 0, maxItems+1), old, second)
	}
	t.root.insert(t.ord, x)
	t.n++
}

func (n *node) insert(o order, x span) {
	i, found := n.find(o, x)
	if found {
		panic("ipam: span inserted twice into a B-tree")
	}
	if len(n.children) == 0 {
		n.items = insertAt(n.items, i, x)
		return
	}
	if n.maybeSplitChild(i) {
		if o.less(n.items[i], x) {
			i++
		} else if !o.less(x, n.items[i]) {
			panic("ipam: span inserted twice into a B-tree")
		}
	}
	n.mutableChild(i).insert(o, x)
}

type removeKind uint8

const (
	removeItem removeKind = iota
	removeMax
)

// delete removes x and reports whether it was there.
func (t *tree) delete(x span) bool {
	if t.root == nil {
		return false
	}
	t.root = t.root.mutableFor(t.cow.Load())
	_, ok := t.root.remove(t.ord, x, removeItem)
	if len(t.root.items) == 0 {
		if len(t.root.children) > 0 {
			t.root = t.root.children[0]
		} else {
			t.root = nil
		}
	}
	if ok {
		t.n--
	}
	return ok
}

// remove deletes x (or the largest item) from the subtree of n, which must be mutable. On
// the way down it tops up any child holding only minItems, so that the child can lose one.
func (n *node) remove(o order, x span, kind removeKind) (span, bool) {
	var i int
	var found bool
	if kind == removeMax {
		if len(n.children) == 0 {
			var out span
			n.items, out = removeAt(n.items, len(n.items)-1)
			return out, true
		}
		i = len(n.items)
	} else {
		i, found = n.find(o, x)
		if len(n.children) == 0 {
			if !found {
				return span{}, false
			}
			var out span
			n.items, out = removeAt(n.items, i)
			return out, true
		}
	}
	if len(n.children[i].items) <= minItems {
		n.growChild(i)
		return n.remove(o, x, kind)
	}
	child := n.mutableChild(i)
	if found {
		// Replace item i by its predecessor, the largest item of the child on its left.
		out := n.items[i]
		n.items[i], _ = child.remove(o, span{}, removeMax)
		return out, true
	}
	return child.remove(o, x, kind)
}

// growChild gives child i at least minItems+1 items: it steals one through n from a sibling
// that can spare it, or else merges the child with a sibling.
func (n *node) growChild(i int) {
	switch {
	case i > 0 && len(n.children[i-1].items) > minItems:
		child, left := n.mutableChild(i), n.mutableChild(i-1)
		var stolen span
		left.items, stolen = removeAt(left.items, len(left.items)-1)
		child.items = insertAt(child.items, 0, n.items[i-1])
		n.items[i-1] = stolen
		if len(left.children) > 0 {
			var c *node
			left.children, c = removeAt(left.children, len(left.children)-1)
			child.children = insertAt(child.children, 0, c)
		}
	case i < len(n.items) && len(n.children[i+1].items) > minItems:
		child, right := n.mutableChild(i), n.mutableChild(i+1)
		var stolen span
		right.items, stolen = removeAt(right.items, 0)
		child.items = append(child.items, n.items[i])
		n.items[i] = stolen
		if len(right.children) > 0 {
			var c *node
			right.children, c = removeAt(right.children, 0)
			child.children = append(child.children, c)
		}
	default:
		if i >= len(n.items) {
			i--
		}
		child := n.mutableChild(i)
		var sep span
		var right *node
		n.items, sep = removeAt(n.items, i)
		n.children, right = removeAt(n.children, i+1)
		child.items = append(child.items, sep)
		child.items = append(child.items, right.items...)
		child.children = append(child.children, right.children...)
	}
}

// get returns the item equal to x.
func (t *tree) get(x span) (span, bool) {
	for n := t.root; n != nil; {
		i, found := n.find(t.ord, x)
		if found {
			return n.items[i], true
		}
		if len(n.children) == 0 {
			break
		}
		n = n.children[i]
	}
	return span{}, false
}

// ceil returns the least item not less than x.
func (t *tree) ceil(x span) (span, bool) {
	var best span
	ok := false
	for n := t.root; n != nil; {
		i, found := n.find(t.ord, x)
		if i < len(n.items) {
			best, ok = n.items[i], true
			if found {
				break
			}
		}
		if len(n.children) == 0 {
			break
		}
		n = n.children[i]
	}
	return best, ok
}

// floor returns the greatest item not greater than x.
func (t *tree) floor(x span) (span, bool) {
	var best span
	ok := false
	for n := t.root; n != nil; {
		i, found := n.find(t.ord, x)
		if found {
			return n.items[i], true
		}
		if i > 0 {
			best, ok = n.items[i-1], true
		}
		if len(n.children) == 0 {
			break
		}
		n = n.children[i]
	}
	return best, ok
}

// max returns the greatest item.
func (t *tree) max() (span, bool) {
	n := t.root
	if n == nil {
		return span{}, false
	}
	for len(n.children) > 0 {
		n = n.children[len(n.children)-1]
	}
	return n.items[len(n.items)-1], true
}

// ascend calls fn on the items not less than from, in order, until fn returns false.
func (t *tree) ascend(from span, fn func(span) bool) {
	if t.root != nil {
		t.root.ascend(t.ord, from, fn)
	}
}

func (n *node) ascend(o order, from span, fn func(span) bool) bool {
	i, _ := n.find(o, from)
	for ; i <= len(n.items); i++ {
		if len(n.children) > 0 && !n.children[i].ascend(o, from, fn) {
			return false
		}
		if i < len(n.items) && !fn(n.items[i]) {
			return false
		}
	}
	return true
}

// all calls fn on every item in order until fn returns false.
func (t *tree) all(fn func(span) bool) {
	if t.root != nil {
		t.root.all(fn)
	}
}

func (n *node) all(fn func(span) bool) bool {
	for i := 0; i <= len(n.items); i++ {
		if len(n.children) > 0 && !n.children[i].all(fn) {
			return false
		}
		if i < len(n.items) && !fn(n.items[i]) {
			return false
		}
	}
	return true
}

// build replaces the tree's contents with items, which must be sorted by the tree's order
// without duplicates. It packs leaves and inner nodes bottom up in O(len(items)), which is
// what makes rebuilding an allocator from stored ranges cheap.
func (t *tree) build(items []span) {
	c := t.cow.Load()
	t.root, t.n = nil, len(items)
	if len(items) == 0 {
		return
	}
	// m leaves hold len(items)-(m-1) items, the other m-1 separate them in the level
	// above. m = ceil((n+1)/(maxItems+1)) puts between minItems and maxItems in each leaf.
	m := (len(items) + 1 + maxItems) / (maxItems + 1)
	inLeaves := len(items) - (m - 1)
	level := make([]*node, 0, m)
	seps := make([]span, 0, m-1)
	pos := 0
	for j := 0; j < m; j++ {
		k := inLeaves / m
		if j < inLeaves%m {
			k++
		}
		leaf := newNode(c)
		leaf.items = append(leaf.items, items[pos:pos+k]...)
		pos += k
		level = append(level, leaf)
		if j < m-1 {
			seps = append(seps, items[pos])
			pos++
		}
	}
	// Each level above groups up to maxItems+1 nodes (at least minItems+1 unless it is the
	// root) under a parent holding the separators between them.
	for len(level) > 1 {
		m := len(level)
		p := (m + maxItems) / (maxItems + 1)
		up := make([]*node, 0, p)
		upSeps := make([]span, 0, p-1)
		ci := 0
		for j := 0; j < p; j++ {
			k := m / p
			if j < m%p {
				k++
			}
			parent := newNode(c)
			parent.children = append(make([]*node, 0, maxItems+1), level[ci:ci+k]...)
			parent.items = append(parent.items, seps[ci:ci+k-1]...)
			ci += k
			up = append(up, parent)
			if j < p-1 {
				upSeps = append(upSeps, seps[ci-1])
			}
		}
		level, seps = up, upSeps
	}
	t.root = level[0]
}
