// Package bootstrapprovider is butler's Cluster API bootstrap provider: the controller that turns each
// BootstrapConfig (bootstrap.butlerlabs.dev/v1alpha1) into the bootstrap data Secret of its
// Machine.
//
// For a BootstrapConfig owned by a CAPI Machine, once the Machine's Cluster reports
// status.initialization.controlPlaneInitialized, it
//   - reads the endpoint from the Cluster's spec.controlPlaneEndpoint, the CA from the Secret
//     <cluster>-ca (tls.crt) and reaches the tenant cluster with <cluster>-kubeconfig (value);
//   - mints a kubeadm-format bootstrap token in the tenant's kube-system (TTL spec.tokenTTL,
//     group system:bootstrappers:kubeadm:default-node-token), labelled with the config's UID;
//   - renders the data for spec.os.type with pkg/bootstrap (node name = the Machine's name,
//     provider ID = the Machine's or its infrastructure machine's spec.providerID when set);
//   - server-side applies the data Secret (named after the config, type cluster.x-k8s.io/secret,
//     keys value and format — "ignition" for flatcar, "cloud-config" otherwise, as Cluster API's
//     contract says and CAPA, CAPV and CAPMOX read it —, label cluster.x-k8s.io/cluster-name,
//     annotation bootstrap.butlerlabs.dev/os, controller ownerReference) and sets status.dataSecretName,
//     status.initialization.dataSecretCreated, phase and the DataSecretAvailable and Ready
//     conditions.
//
// Tokens: while the Machine has no nodeRef the token's expiration is pushed out before it
// lapses (a machine that boots late still joins), and a token the tenant no longer has is
// replaced and the data re-rendered, as CAPI's kubeadm provider does. Once the Machine has a
// nodeRef, or the config is deleted (a finalizer gives one best-effort pass), the config's
// tokens are deleted from the tenant; tokens left behind expire and the tenant's tokencleaner
// removes them.
//
// Every failure (no Machine yet, control plane not initialized, no endpoint, no or bad CA,
// tenant unreachable, an unknown OS or input the renderer rejects) is a condition with a
// reason and a message on the config, never a panic or an empty Secret. Work is event driven:
// BootstrapConfigs, Machines, Clusters and the cluster-labelled Secrets are watched; the only
// timers are the token refresh and the retry of a CA Secret, which carries no label to watch.
//
// The BootstrapConfig's Go type is the contract's, in pkg/external (providers.go): the
// TenantCluster controller writes its template with the same type.
package bootstrapprovider
