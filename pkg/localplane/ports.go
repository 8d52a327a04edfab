package localplane

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/butlerdotdev/butler-apiserver/pkg/localports"
)

// ports are the plane's port variables and their values. Ports come from outside the kernel's
// ephemeral range (localports.Free) and the tenants' range: inside the first, any outgoing
// connection may take a port between the moment it is found free and the moment its server
// binds it. A server that still finds its port taken is started again on another (settle),
// unless the environment fixed it.
type ports struct {
	values  map[string]int
	fixed   map[string]bool
	used    map[int]bool
	tenants localports.Range
	free    func() (int, error) // localports.Free; a fake in tests
}

func newPorts(fixedPorts map[string]int, tenants localports.Range) *ports {
	p := &ports{values: map[string]int{}, fixed: map[string]bool{}, used: map[int]bool{}, tenants: tenants, free: localports.Free}
	for name, port := range fixedPorts {
		p.values[name], p.fixed[name] = port, true
		p.used[port] = true
	}
	return p
}

// pick gives each of names that the environment did not fix a port no other variable holds.
// It says whether any changed: false when all are fixed.
func (p *ports) pick(names []string) (bool, error) {
	changed := false
	for _, name := range names {
		if p.fixed[name] {
			continue
		}
		port, err := p.next()
		if err != nil {
			return changed, err
		}
		p.values[name], p.used[port], changed = port, true, true
	}
	return changed, nil
}

// next is a free port outside the tenants' range that no variable held yet.
func (p *ports) next() (int, error) {
	for range 2000 {
		port, err := p.free()
		if err != nil {
			return 0, err
		}
		if !p.used[port] && !p.tenants.Contains(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("found no free port on 127.0.0.1 outside the ephemeral range %s and the tenants' %s", localports.Ephemeral(), p.tenants)
}

func (p *ports) get(name string) int { return p.values[name] }

// listening are the socket inodes listening on port, from /proc/net/tcp and tcp6.
func listening(port int) map[string]bool {
	inodes := map[string]bool{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, _ := os.ReadFile(file)
		for inode := range parseListening(string(data), port) {
			inodes[inode] = true
		}
	}
	return inodes
}

// parseListening reads a /proc/net/tcp table: the inodes of the sockets listening (state 0A)
// on port, on any address.
func parseListening(table string, port int) map[string]bool {
	inodes := map[string]bool{}
	hex := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 10 && f[3] == "0A" && strings.HasSuffix(f[1], hex) {
			inodes[f[9]] = true
		}
	}
	return inodes
}

// ownsPort says pid listens on port (one of its file descriptors is that listening socket), so
// an answer on port comes from it and not from another process that holds the port.
func ownsPort(pid, port int) bool {
	inodes := listening(port)
	if len(inodes) == 0 {
		return false
	}
	fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, _ := os.ReadDir(fdDir)
	for _, fd := range fds {
		target, err := os.Readlink(fdDir + "/" + fd.Name())
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true
		}
	}
	return false
}
