package kubectlbutler

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Node is one line of describe's tree: an object and its Ready condition (or the condition that
// stands for it), as `clusterctl describe cluster` prints them.
type Node struct {
	// Name is Kind/name, or a group's title ("Workers").
	Name string
	// Ready is the condition's status (True, False, Unknown), empty for a group.
	Ready   string
	Reason  string
	Message string
	// Since is the condition's last transition, zero when unknown.
	Since    time.Time
	Children []*Node
}

// Add appends children and returns n.
func (n *Node) Add(children ...*Node) *Node {
	n.Children = append(n.Children, children...)
	return n
}

// Render writes the tree as a table: NAME (with the tree's branches), READY, REASON, SINCE,
// MESSAGE; SINCE is counted back from now.
func Render(w io.Writer, root *Node, now time.Time) error {
	return renderTable(w, "NAME\tREADY\tREASON\tSINCE\tMESSAGE", root, now)
}

// renderTable writes the tree under header (five columns, as Render's).
func renderTable(w io.Writer, header string, root *Node, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	renderNode(tw, root, "", "", now)
	return tw.Flush()
}

func renderNode(w io.Writer, n *Node, prefix, childPrefix string, now time.Time) {
	since := ""
	if !n.Since.IsZero() {
		since = duration.HumanDuration(now.Sub(n.Since))
	}
	fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\n", prefix, n.Name, n.Ready, n.Reason, since, oneLine(n.Message))
	for i, c := range n.Children {
		if i == len(n.Children)-1 {
			renderNode(w, c, childPrefix+"└─", childPrefix+"  ", now)
		} else {
			renderNode(w, c, childPrefix+"├─", childPrefix+"│ ", now)
		}
	}
}

// oneLine keeps a message on its row: newlines and tabs would break the table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
