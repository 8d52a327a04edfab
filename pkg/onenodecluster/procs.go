package onenodecluster

import (
	"time"

	"github.com/butlerdotdev/butler-apiserver/pkg/localprovider/process"
)

// stopGrace is how long a process has between SIGTERM and SIGKILL when the cluster stops.
const stopGrace = 30 * time.Second

// procs are the cluster's processes.
type procs struct {
	process.Group
	log func(format string, args ...any)
}

func (ps *procs) start(c component) error {
	_, err := ps.Start(c.name, c.args)
	return err
}

// stop stops name if it was started: SIGTERM, then SIGKILL after stopGrace.
func (ps *procs) stop(name string) {
	if ps.Stop(name, stopGrace) {
		ps.log("%s did not stop in %s; killed it", name, stopGrace)
	}
}
