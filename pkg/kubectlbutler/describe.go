package kubectlbutler

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
)

var (
	clustersGVR = external.ClusterGVK.GroupVersion().WithResource("clusters")
	machinesGVR = external.MachineGVK.GroupVersion().WithResource("machines")
)

// conditioned is what describe reads of a control plane of any provider: the contract's
// conditions (v1beta1's carry a severity too, ignored) and a phase.
type conditioned struct {
	Status struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
		Phase      string             `json:"phase,omitempty"`
	} `json:"status"`
}

func newDescribeCommand(o *Options) *cobra.Command {
	var skipNodes bool
	cmd := &cobra.Command{
		Use:   "describe CLUSTER",
		Short: "Print a TenantCluster as a tree: control plane, machines, nodes and addons with their Ready conditions",
		Long: `Reads the TenantCluster and its Cluster API objects through the management cluster, and the
Nodes through a read-only kubeconfig (tenantclusters/viewerkubeconfig) when the tenant answers.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			butler, dyn, ns, err := o.clients()
			if err != nil {
				return err
			}
			mapper, err := o.Flags.ToRESTMapper()
			if err != nil {
				return err
			}
			d := &describer{butler: butler, dyn: dyn, mapper: mapper, ns: ns, nodes: nodesThroughViewerKubeconfig(butler)}
			if skipNodes {
				d.nodes = nil
			}
			root, err := d.tree(ctx(cmd), args[0])
			if err != nil {
				return err
			}
			return Render(o.Out, root, time.Now())
		},
	}
	cmd.Flags().BoolVar(&skipNodes, "no-nodes", false, "do not mint a read-only kubeconfig to read the tenant's Nodes")
	return cmd
}

// describer gathers the tree; nodes lists the tenant's Nodes (nil: not read).
type describer struct {
	butler clientset.Interface
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	ns     string
	nodes  func(ctx context.Context, tc *v1alpha1.TenantCluster) ([]corev1.Node, error)
}

// tree is TenantCluster → control plane → workers (machines → nodes) → addons. Only the
// TenantCluster must be readable; what is not is a line saying why.
func (d *describer) tree(ctx context.Context, name string) (*Node, error) {
	tc, err := d.butler.ButlerV1alpha1().TenantClusters(d.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, explain(err, "describe", d.ns, name)
	}
	root := conditionNode("TenantCluster/"+tc.Name, tc.Status.Conditions, "Ready")
	if root.Message == "" && tc.Status.LastOperation != nil {
		root.Message = tc.Status.LastOperation.Description
	}
	controlPlane, workers := d.capi(ctx, tc)
	return root.Add(controlPlane, workers, d.addons(ctx, tc)), nil
}

// capi is the control plane (its object and any control plane machines) and the workers.
func (d *describer) capi(ctx context.Context, tc *v1alpha1.TenantCluster) (controlPlane, workers *Node) {
	controlPlane, workers = &Node{Name: "ControlPlane"}, &Node{Name: "Workers"}
	tns := tc.Status.TenantNamespace
	if tns == "" {
		controlPlane.Message = "no tenant namespace yet"
		return controlPlane, workers
	}
	controlPlane = d.controlPlane(ctx, tns, tc.Name)
	machines, err := d.dyn.Resource(machinesGVR).Namespace(tns).List(ctx, metav1.ListOptions{LabelSelector: clusterv1.ClusterNameLabel + "=" + tc.Name})
	if err != nil {
		workers.Message = unreadable("Machines", err)
		return controlPlane, workers
	}
	nodes, nodesErr := d.tenantNodes(ctx, tc)
	placed := map[string]bool{}
	sort.Slice(machines.Items, func(i, j int) bool { return machines.Items[i].GetName() < machines.Items[j].GetName() })
	for i := range machines.Items {
		m, err := external.FromUnstructured[clusterv1.Machine](&machines.Items[i])
		if err != nil {
			workers.Add(&Node{Name: "Machine/" + machines.Items[i].GetName(), Message: err.Error()})
			continue
		}
		n := conditionNode("Machine/"+m.Name, m.Status.Conditions, "Ready")
		if n.Ready == "" {
			n.Reason = m.Status.Phase
		}
		if m.Status.NodeRef.Name != "" {
			placed[m.Status.NodeRef.Name] = true
			n.Add(nodeLine(m.Status.NodeRef.Name, nodes, nodesErr))
		}
		if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
			controlPlane.Add(n)
		} else {
			workers.Add(n)
		}
	}
	for i := range nodes {
		if !placed[nodes[i].Name] {
			workers.Add(nodeLine(nodes[i].Name, nodes, nil))
		}
	}
	if nodesErr != nil {
		workers.Message = nodesErr.Error()
	}
	return controlPlane, workers
}

// controlPlane is the object the Cluster's controlPlaneRef names, or the Cluster's line saying
// why it is not there.
func (d *describer) controlPlane(ctx context.Context, ns, name string) *Node {
	n := &Node{Name: "ControlPlane"}
	u, err := d.dyn.Resource(clustersGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		n.Message = unreadable("Cluster", err)
		return n
	}
	cluster, err := external.FromUnstructured[clusterv1.Cluster](u)
	if err != nil {
		n.Message = err.Error()
		return n
	}
	ref := cluster.Spec.ControlPlaneRef
	if ref.Kind == "" {
		n.Message = "the Cluster names no control plane yet"
		return n
	}
	n.Name = "ControlPlane - " + ref.Kind + "/" + ref.Name
	mapping, err := d.mapper.RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if err != nil {
		n.Message = err.Error()
		return n
	}
	obj, err := d.dyn.Resource(mapping.Resource).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		n.Message = unreadable(ref.Kind+"/"+ref.Name, err)
		return n
	}
	cp, err := external.FromUnstructured[conditioned](obj)
	if err != nil {
		n.Message = err.Error()
		return n
	}
	line := conditionNode(n.Name, cp.Status.Conditions, "Ready", "Available")
	if line.Ready == "" {
		line.Reason = cp.Status.Phase
	}
	return line
}

// addons are the cluster's TenantAddons and the built-in addons its status observes.
func (d *describer) addons(ctx context.Context, tc *v1alpha1.TenantCluster) *Node {
	n := conditionNode("Addons", tc.Status.Conditions, "AddonsReady")
	list, err := d.butler.ButlerV1alpha1().TenantAddons(tc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		n.Message = unreadable("TenantAddons", err)
	} else {
		for i := range list.Items {
			a := &list.Items[i]
			if a.Spec.ClusterRef.Name != tc.Name {
				continue
			}
			line := conditionNode("TenantAddon/"+a.Name, a.Status.Conditions, "Ready")
			if line.Ready == "" {
				line.Reason = string(a.Status.Phase)
			}
			if line.Message == "" {
				line.Message = a.Status.Message
			}
			n.Add(line)
		}
	}
	if tc.Status.ObservedState != nil {
		for _, a := range tc.Status.ObservedState.Addons {
			n.Add(&Node{Name: "Addon/" + a.Name, Reason: a.Status, Message: a.Version})
		}
	}
	return n
}

func (d *describer) tenantNodes(ctx context.Context, tc *v1alpha1.TenantCluster) ([]corev1.Node, error) {
	switch {
	case d.nodes == nil:
		return nil, nil
	case tc.Status.Phase == v1alpha1.TenantClusterHibernated:
		return nil, fmt.Errorf("nodes not read: the cluster is hibernated")
	}
	return d.nodes(ctx, tc)
}

// nodesThroughViewerKubeconfig lists the tenant's Nodes with a short-lived read-only kubeconfig.
func nodesThroughViewerKubeconfig(butler clientset.Interface) func(context.Context, *v1alpha1.TenantCluster) ([]corev1.Node, error) {
	return func(ctx context.Context, tc *v1alpha1.TenantCluster) ([]corev1.Node, error) {
		minted, err := mint(ctx, butler, tc.Namespace, tc.Name, true, 0)
		if err != nil {
			return nil, fmt.Errorf("nodes not read: %v", err)
		}
		config, err := clientcmd.RESTConfigFromKubeConfig(minted.Status.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("nodes not read: %v", err)
		}
		config.Timeout = 5 * time.Second
		list, err := kubernetes.NewForConfigOrDie(config).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("nodes not read: the tenant did not answer: %v", err)
		}
		return list.Items, nil
	}
}

// nodeLine is a Node's line with its NodeReady condition, or what kept it from being read.
func nodeLine(name string, nodes []corev1.Node, err error) *Node {
	line := &Node{Name: "Node/" + name}
	if err != nil {
		return line
	}
	for i := range nodes {
		if nodes[i].Name != name {
			continue
		}
		for _, c := range nodes[i].Status.Conditions {
			if c.Type == corev1.NodeReady {
				line.Ready, line.Reason, line.Message, line.Since = string(c.Status), c.Reason, c.Message, c.LastTransitionTime.Time
			}
		}
		return line
	}
	if nodes != nil {
		line.Message = "not in the tenant"
	}
	return line
}

// conditionNode is a line with the first of types found in conditions.
func conditionNode(name string, conditions []metav1.Condition, types ...string) *Node {
	n := &Node{Name: name}
	for _, t := range types {
		if c := meta.FindStatusCondition(conditions, t); c != nil {
			n.Ready, n.Reason, n.Message, n.Since = string(c.Status), c.Reason, c.Message, c.LastTransitionTime.Time
			return n
		}
	}
	return n
}

// unreadable says what could not be read and why, naming a missing right plainly.
func unreadable(what string, err error) string {
	if apierrors.IsForbidden(err) {
		return what + " not readable: you have no right to read it (" + err.Error() + ")"
	}
	return what + " not read: " + err.Error()
}
