package realnode

import (
	"slices"
	"strings"
	"testing"
)

func TestMountsUnderDeepestFirst(t *testing.T) {
	mounts := `proc /proc proc rw 0 0
overlay /c/containerd/root/a/rootfs overlay rw 0 0
tmpfs /c/kubelet/pods/x/volumes/kube-api-access tmpfs rw 0 0
shm /c/containerd/state/b\040c/shm tmpfs rw 0 0
tmpfs /cx/other tmpfs rw 0 0
tmpfs /c tmpfs rw 0 0
`
	got := mountsUnder(strings.NewReader(mounts), "/c")
	want := []string{"/c/kubelet/pods/x/volumes/kube-api-access", "/c/containerd/state/b c/shm", "/c/containerd/root/a/rootfs", "/c"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestContainerdConfig(t *testing.T) {
	c := Containerd{Root: "/n/root", State: "/n/state", Socket: "/r/c.sock", CNIConfDir: "/n/cni", CNITemplate: "/n/cni.template"}.Config()
	for _, want := range []string{`root = "/n/root"`, `address = "/r/c.sock"`, `address = "/r/c.sock.ttrpc"`,
		`conf_template = "/n/cni.template"`, "restrict_oom_score_adj = false", `sandbox_image = "` + PauseImage + `"`} {
		if !strings.Contains(c, want) {
			t.Errorf("lacks %q:\n%s", want, c)
		}
	}
	if strings.Contains(c, "BinaryName") {
		t.Errorf("runc named without being asked:\n%s", c)
	}
}
