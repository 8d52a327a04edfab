// Package bootstrap renders and reads the bootstrap data that lets a worker machine join its
// tenant cluster, one format per operating system, and mints the kubeadm-format bootstrap
// tokens that data carries.
//
// Render(os, Input) is a pure function: the same Input gives the same bytes. Parse(os, data)
// reads those bytes back with the format's own library (sigs.k8s.io/yaml for the YAML
// formats, Ignition's config parser for Flatcar, go-toml for Bottlerocket) and returns the
// JoinInfo a joining kubelet would use. The local infrastructure provider boots its machines
// by calling exactly Parse, so a field a renderer gets wrong is a machine that does not join.
//
// What a real machine of each OS does with the data:
//
//   - talos: the data is a Talos v1alpha1 machine config (machine.type worker). machined
//     reads it as user data, sets the hostname (machine.network.hostname), writes the kubelet
//     bootstrap kubeconfig from cluster.controlPlane.endpoint, cluster.token and cluster.ca.crt,
//     and starts the kubelet with machine.kubelet (clusterDNS, extraArgs provider-id); the
//     kubelet TLS-bootstraps (CSR with the token, node client certificate) and registers; Talos
//     then applies machine.nodeLabels and machine.nodeTaints. machine.token/machine.ca are
//     Talos' own API PKI (trustd): with a non-Talos control plane (Steward, kubeadm) there is
//     no trustd, so they carry the bootstrap token and the cluster CA only to satisfy the schema.
//   - rocky: cloud-init runs the #cloud-config: write_files puts the kubeadm JoinConfiguration
//     (and a kubelet-configuration patch with clusterDNS/clusterDomain) under /run/kubeadm,
//     then runcmd runs `kubeadm join --config ...`. kubeadm fetches the cluster-info ConfigMap
//     from kube-public anonymously, checks its JWS signature with the token and the CA against
//     caCertHashes, downloads the kubelet config, writes bootstrap-kubelet.conf and starts the
//     kubelet with node-labels, provider-id and register-with-taints; the kubelet
//     TLS-bootstraps and registers the Node. The image must carry kubeadm, kubelet and a CRI
//     (as CAPI's image-builder images do). This is the layout of CAPI's kubeadm provider.
//   - flatcar: Ignition (spec 3.4) runs in the initramfs on first boot: it writes the same
//     JoinConfiguration and patch under /etc/kubeadm and /etc/hostname, and enables
//     kubeadm.service, a oneshot unit that runs `kubeadm join` once
//     (ConditionPathExists=!/etc/kubernetes/kubelet.conf); from there the join is as for rocky.
//   - bottlerocket: the TOML is user data for Bottlerocket's API server (apiserver + sundog);
//     settings.kubernetes.{api-server, cluster-certificate, bootstrap-token} render the
//     kubelet's bootstrap kubeconfig (authentication-mode "tls"), hostname-override the node
//     name, node-labels/node-taints/provider-id/cluster-dns-ip/cluster-domain the kubelet
//     config; the kubelet TLS-bootstraps with the token and registers.
//   - kairos: the #cloud-config's cluster section is handed by Kairos' agent to the
//     provider-kubeadm cluster plugin (role worker), which writes joinConfiguration to its
//     kubeadm config and runs kubeadm join; discovery.bootstrapToken is spelled out because the
//     plugin would otherwise derive a token from cluster_token and skip CA verification.
//
// The control plane side of a join (the cluster-info ConfigMap signed for the token, RBAC for
// system:bootstrappers to create CSRs, auto-approval of node client certificates) is the
// control plane's job, as kubeadm sets it up.
package bootstrap
