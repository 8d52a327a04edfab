package controllerkit

import (
	"strings"

	"k8s.io/client-go/tools/events"

	butlerscheme "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned/scheme"
)

// Recorder returns an events.k8s.io/v1 recorder for component, whose Events may be about butler's
// own kinds (kubectl describe shows them). The recorder groups repeats of one Event into a series
// (deduplicated, with a count). Without a management cluster it drops them.
func (d *Deps) Recorder(component string) events.EventRecorder {
	if d.Kube == nil {
		return &events.FakeRecorder{}
	}
	if d.broadcaster == nil {
		d.broadcaster = events.NewBroadcaster(&events.EventSinkImpl{Interface: d.Kube.EventsV1()})
	}
	return d.broadcaster.NewRecorder(butlerscheme.Scheme, component)
}

// maxNote is the longest note events.k8s.io/v1 accepts (bytes).
const maxNote = 1024

// EventNote is note cut to what an Event may hold.
func EventNote(note string) string {
	if len(note) <= maxNote {
		return note
	}
	return strings.ToValidUTF8(note[:maxNote-3], "") + "..."
}
