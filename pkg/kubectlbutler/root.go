// Package kubectlbutler is the `kubectl butler` plugin: its commands talk to butler-apiserver
// through the generated clientset with kubectl's own flags (--kubeconfig, --context, -n).
package kubectlbutler

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"

	clientset "github.com/butlerdotdev/butler-apiserver/pkg/generated/clientset/versioned"
)

// Options are what every command shares: kubectl's flags and the streams.
type Options struct {
	Flags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
}

// NewCommand is `kubectl butler` with its subcommands.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{Flags: genericclioptions.NewConfigFlags(true), IOStreams: streams}
	cmd := &cobra.Command{
		Use:           "kubectl-butler",
		Short:         "Work with butler's TenantClusters",
		SilenceUsage:  true,
		SilenceErrors: false,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl butler"},
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	o.Flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(
		newKubeconfigCommand(o),
		newHibernateCommand(o, true),
		newHibernateCommand(o, false),
		newSnapshotCommand(o),
		newRestoreCommand(o),
		newRotateCommand(o),
		newDescribeCommand(o),
		newUpgradeCommand(o),
	)
	return cmd
}

// clients are the butler clientset, a dynamic client (Cluster API's objects) and the namespace
// the flags name.
func (o *Options) clients() (clientset.Interface, dynamic.Interface, string, error) {
	config, err := o.Flags.ToRESTConfig()
	if err != nil {
		return nil, nil, "", err
	}
	ns, _, err := o.Flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, nil, "", err
	}
	butler, err := clientset.NewForConfig(config)
	if err != nil {
		return nil, nil, "", err
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, nil, "", err
	}
	return butler, dyn, ns, nil
}

// explain turns the API's refusals about a TenantCluster into sentences that say what was asked
// and what is missing.
func explain(err error, what, ns, cluster string) error {
	return explainKind(err, what, ns, "TenantCluster", cluster)
}

// explainKind is explain for an object of any kind (an UpdateRun, an UpdateStrategy).
func explainKind(err error, what, ns, kind, name string) error {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: %s %q not found in namespace %q (%v)", what, kind, name, ns, err)
	case apierrors.IsForbidden(err) && errors.As(err, &status):
		d := status.Status().Details
		resource := "tenantclusters"
		if d != nil && d.Kind != "" {
			resource = d.Kind
		}
		return fmt.Errorf("%s: you have no right to %s in namespace %q: %s", what, resource, ns, status.Status().Message)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// ctx is the context of one command run.
func ctx(cmd *cobra.Command) context.Context {
	if c := cmd.Context(); c != nil {
		return c
	}
	return context.Background()
}

// clients are what a verb needs: the butler clientset, the namespace and where to write.
type clients struct {
	butler clientset.Interface
	ns     string
	out    io.Writer
}

// verb is a command of one argument (a cluster, a run, a strategy) that runs with the clients
// kubectl's flags name.
func verb(o *Options, use, short string, run func(ctx context.Context, c clients, arg string) error) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.with(cmd, args[0], run) },
	}
}

// with runs one verb on arg with the clients kubectl's flags name.
func (o *Options) with(cmd *cobra.Command, arg string, run func(ctx context.Context, c clients, arg string) error) error {
	butler, _, ns, err := o.clients()
	if err != nil {
		return err
	}
	return run(ctx(cmd), clients{butler: butler, ns: ns, out: o.Out}, arg)
}
