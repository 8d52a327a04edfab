// Package controlplane is the local provider's stand-in for Steward: it turns a Steward
// TenantControlPlane into a real kube-apiserver, kube-controller-manager and kube-scheduler
// process on this machine. It exists so that `make run` and the tests have real tenant control
// planes without a cloud or containers; nothing of it runs in production, where Steward (or
// Kamaji) does this work as pods.
//
// It runs only the TenantControlPlanes a StewardControlPlane controls (package
// stewardcontrolplane makes them, for local clusters only) or that still hold its finalizer, and
// none in a namespace a real Steward has (Options.ExternalNamespaces).
//
// It keeps the contract a production management cluster keeps (docs/architecture.md): a
// TenantControlPlane gets its own CA (Secret <tcp>-ca: ca.crt, ca.key, tls.crt, tls.key; also
// Cluster API's cluster CA Secret, as the names coincide), a port on loopback from a range, the
// three processes on the management etcd under --etcd-prefix=/<tcp uid>, the join setup kubeadm
// makes (bootstrap-token RBAC, CSR auto-approval, cluster-info, kubeadm-config and
// kubelet-config), Secret <tcp>-admin-kubeconfig (admin.conf, super-admin.conf, admin.svc,
// super-admin.svc) and status.kubernetesResources.version.status "Ready" once it all answers.
//
// Processes are supervised (package process: restarted with backoff, adopted after a provider
// crash), stopped and their etcd prefix deleted when the TenantControlPlane is deleted (a
// finalizer holds it until then), and all stopped when the provider stops. Their pid files are in
// the state directory (<state>/<TenantControlPlane UID>/*.pid).
//
// Any Kubernetes version other than the one in --bin-dir is built on first use (package
// kubebuild); while it builds the TenantControlPlane says Provisioning (or Upgrading), and if it
// cannot be built, NotReady with the reason in the annotations localprovider.butlerlabs.dev/reason
// and /message and an Event (which the StewardControlPlane's status then carries).
package controlplane
