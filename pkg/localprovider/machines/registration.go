package machines

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
)

// registrationFile records, in a machine's state directory, the Node its join registers: written
// before the join, so a machine deleted before its status names a Node (a real node that joined
// but never booted) still deletes it.
const registrationFile = "registration.json"

type registration struct {
	NodeName   string `json:"nodeName"`
	ProviderID string `json:"providerID"`
}

func writeRegistration(dir string, r registration) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, registrationFile), data, 0o600)
}

func readRegistration(dir string) (registration, bool) {
	var r registration
	data, err := os.ReadFile(filepath.Join(dir, registrationFile))
	if err != nil || json.Unmarshal(data, &r) != nil || r.NodeName == "" || r.ProviderID == "" {
		return registration{}, false
	}
	return r, true
}

// registeredNode is the Node the machine registered: the one its status names once it joined,
// else the one its join recorded, with the provider ID that Node must carry to be this machine's.
func (c *Controller) registeredNode(lm *external.LocalMachine) (name, providerID string) {
	name = lm.Status.NodeName
	for _, a := range lm.Status.Addresses {
		if a.Type == string(clusterv1.MachineHostName) && name == "" {
			name = a.Address
		}
	}
	if name != "" {
		return name, ""
	}
	if r, ok := readRegistration(c.machineDir(lm)); ok {
		return r.NodeName, r.ProviderID
	}
	return "", ""
}

// deleteNodeOf deletes the Node name; given a provider ID, only while the Node carries it (a join
// that failed before it registered leaves a record of a Node that may be another machine's).
func deleteNodeOf(ctx context.Context, client kubernetes.Interface, name, providerID string) error {
	if providerID == "" {
		return client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	}
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if node.Spec.ProviderID != providerID {
		return nil
	}
	uid := node.UID
	return client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}
