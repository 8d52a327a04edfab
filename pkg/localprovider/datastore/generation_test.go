package datastore

import "testing"

// A restore's generations are "<root>~<n>/" under a tenant's prefix; nothing else counts as one.
func TestGenerations(t *testing.T) {
	const root = "/uid-a/"
	for _, tc := range []struct {
		prefix string
		n      int
		ok     bool
	}{
		{root, 0, true},
		{"/uid-a/~1/", 1, true},
		{"/uid-a/~12/", 12, true},
		{"/uid-a/~0/", 0, false},
		{"/uid-a/~01/", 0, false},
		{"/uid-a/~1", 0, false},
		{"/uid-a/~1/~2/", 0, false},
		{"/uid-a/pods/", 0, false},
		{"/uid-b/~1/", 0, false},
		{"/uid-a0/", 0, false},
	} {
		n, ok := GenerationOf(root, tc.prefix)
		if n != tc.n || ok != tc.ok {
			t.Errorf("GenerationOf(%q) = %d, %v; want %d, %v", tc.prefix, n, ok, tc.n, tc.ok)
		}
		if ok && Generation(root, n) != tc.prefix {
			t.Errorf("Generation(%d) = %q, want %q", n, Generation(root, n), tc.prefix)
		}
		want := root
		if !ok {
			want = tc.prefix
		}
		switch tc.prefix { // generations of another root
		case "/uid-b/~1/":
			want = "/uid-b/"
		case "/uid-a/~1/~2/":
			want = "/uid-a/~1/"
		}
		if got := RootOf(tc.prefix); got != want {
			t.Errorf("RootOf(%q) = %q, want %q", tc.prefix, got, want)
		}
	}
	if ObjectsEnd(root) <= "/uid-a/validatingwebhookconfigurations/z" || ObjectsEnd(root) > Generation(root, 1) {
		t.Errorf("ObjectsEnd(%q) = %q: not after every object and before the generations", root, ObjectsEnd(root))
	}
}
