// Package machines is the local infrastructure provider's controller: LocalCluster,
// LocalMachine and LocalMachineTemplate (infrastructure.butlerlabs.dev/v1alpha1, the Cluster API
// v1beta2 infrastructure contract), for make run and the tests on one machine. Nothing of it
// runs in production; there, a cloud or hypervisor provider boots real machines from the same
// bootstrap data.
//
// A LocalCluster is provisioned once its control plane provider has set
// spec.controlPlaneEndpoint. From then on, and while the cluster's admin kubeconfig
// (<cluster>-kubeconfig) exists, one kwok controller (sigs.k8s.io/kwok, in this process) per
// tenant cluster keeps the Nodes annotated kwok.x-k8s.io/node=fake Ready (leases and status
// heartbeats) and moves the pods scheduled to them to Running, with kwok's default stages.
// In process, because a kwok binary per tenant costs 30-50 MiB and a process to supervise.
//
// A LocalMachine "boots" as a machine of its OS would: it reads only its Machine's bootstrap
// data Secret (spec.bootstrap.dataSecretName: key value), as an image of the OS the annotation
// bootstrap.butlerlabs.dev/os names. It takes the data only in the contract's data.format that
// OS's first-boot agent reads (Ignition for flatcar, cloud-config otherwise; an unset format is
// cloud-config, as the real providers read it), parses it with pkg/bootstrap as that agent
// would (Flatcar's units as systemd resolves them), and joins as a kubelet:
//
//  1. discovery: with a CA in the data, that CA; with CA pins, kube-public/cluster-info read
//     anonymously (waiting up to 10s for the control plane to sign it for a new token), its
//     JWS signature checked with the bootstrap token, its CA checked against
//     the pins, and read again over TLS verified by that CA (kubeadm's token discovery);
//  2. a CertificateSigningRequest for the node client certificate (signer
//     kubernetes.io/kube-apiserver-client-kubelet, CN system:node:<name>, O system:nodes)
//     made with the bootstrap token; the name depends only on the key, which is kept in the
//     machine's state directory before the request, so a join resumed after a restart waits
//     for the same request;
//  3. a watch until the tenant's kube-controller-manager approves and signs it (bounded; a
//     timeout is the condition CertificateNotIssued);
//  4. the Node, created with the node's own certificate: name, labels and taints from the
//     data, the well-known labels a kubelet adds, spec.providerID, the kwok annotation.
//
// Then spec.providerID, status.addresses, status.nodeName and status.initialization.provisioned
// are set, and Cluster API matches the Machine to the Node. A step that fails is the Ready
// condition's reason (DiscoveryFailed, CertificateRequestFailed, CertificateNotIssued,
// NodeRegistrationFailed, BootstrapDataInvalid) with phase Failed, and the join is tried again
// later, as a kubelet retries; a wrong endpoint, token or CA never gives a Node. A finalizer
// keeps a LocalMachine until its Node is deleted (with the cluster's admin kubeconfig, or the
// node's own credentials) and its state directory removed.
//
// # Real nodes
//
// A LocalMachine of spec.nodeType real (kwok stays the default: a real node costs a kubelet and
// a containerd, kwok nodes cost nearly nothing) joins exactly as above, through the same Joiner,
// except that its Node carries no kwok annotation and its InternalIP is its own address. A
// TenantCluster gets real workers from its ProviderConfig (provider local, spec.local.nodeType
// real), which the workers' LocalMachineTemplate carries: not from a TenantCluster field,
// because a real node runs the tenant's pods as processes of this host, which is the platform
// admin's to offer (only it writes ProviderConfigs), not every operator's to ask. Then it
// boots (RealNodes):
//
//   - a network namespace of its own (butler-<id>), plugged by a veth into the host's bridge
//     (--node-bridge, one per host, made with the first node and removed with the last), with
//     the next free address of --node-bridge-cidr. A tenant endpoint on the host's loopback (the
//     default) is forwarded into the namespace's loopback by this process, so the kubelet dials
//     the endpoint of its bootstrap data unchanged; the tenant's kube-apiserver reaches the
//     kubelet on the node's address with its kubelet client certificate (logs, exec).
//   - one containerd per node, in the node's namespace, with its own root, state and socket.
//     Not one containerd shared with a namespace per node: CRI uses the containerd namespace
//     k8s.io whatever the client, and runs the CNI plugins in containerd's own network
//     namespace, so the pods' veths land where containerd is; per-node network namespaces need
//     per-node containerds. Its CNI configuration is rendered by containerd from the pod CIDR the
//     tenant's kube-controller-manager allocates to the Node. The images (pause, the project's
//     echo image, CoreDNS) are imported from OCI archives built from source (hack/build-node-images.sh).
//   - the kubelet built from source (hack/build-kube.sh kubelet kube-proxy, as the one-node
//     cluster's), in the namespace, with the join's client certificate and kubeconfig, its pods
//     under the cgroup /butler-nodes/<id>.
//   - the kubelet's serving certificate, through a kubelet-serving CSR (serverTLSBootstrap)
//     that the tenant's kube-controller-manager signs with the tenant CA and the tenant's
//     kube-apiserver verifies (--kubelet-certificate-authority). Upstream approves none; this
//     controller does, as kubelet-csr-approver does in a cluster, because only it knows from its
//     own record (the LocalMachine's status, which nothing else writes) the name and address
//     each machine was given, and it already holds the tenant's admin credentials. An approver
//     in the tenant would be a pod on the nodes it serves, judging by name patterns, address
//     ranges or the Node's addresses, which the node itself writes. It approves a node's own
//     request for exactly that name and address with a kubelet's usages, and denies, with the
//     reason, anything else a node asks and every kubelet-serving request no node made.
//   - the tenant's cluster DNS, when the bootstrap data names a clusterDNS: CoreDNS (built from
//     its module, not the smallest resolver that would do: it is what a cluster runs, and its
//     kubernetes plugin is the reference for the cluster domain's records) as a Deployment in
//     the tenant's kube-system behind the Service kube-dns at that address, in its node's
//     network namespace, reading the API at the bootstrap data's endpoint (clusterDNS).
//
// A node whose kubelet or containerd exits is reported (Ready False, NodeDown), not restarted:
// its Node goes NotReady as a real machine's would. Deleting the machine (or stopping this
// process) stops the processes and removes what they made: the processes left in the node's
// cgroups, its own a killed provider left (kubelet, containerd, kube-proxy, containerd's shims), mounts under its directories, its pods' network namespaces
// and its own (veths, the pods' bridge and every iptables rule inside go with it), the cgroups,
// the kubelet's links in /var/log/containers, its address and its state. The host's own
// iptables are never written.
package machines
