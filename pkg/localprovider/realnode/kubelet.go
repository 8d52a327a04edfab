package realnode

import "fmt"

// Kubelet is a real node's KubeletConfiguration: its Pods under a cgroup root of their own (one
// the clean-up can remove), the node's containerd, Webhook authentication and authorization
// with anonymous requests refused, and client certificates of ClientCAFile. It is a shared
// development machine: no evictions or image garbage collection for disk use ("0%" turns a
// signal off; a 1% threshold still tainted the node on a 250 GB disk with under 2.5 GB free,
// which a fresh machine's empty Go caches can reach, and left Pods Pending with no node).
// failCgroupV1: kubelets from 1.35 refuse a cgroup v1 host, as this machine is, unless told.
type Kubelet struct {
	CgroupRoot, ContainerdSocket string
	Address                      string // where it serves (logs, exec, port-forward)
	Port, HealthzPort            int
	ClientCAFile, PodLogsDir     string
	Extra                        string // more fields, YAML lines each ending in a newline
}

// Config is the configuration file's content.
func (k Kubelet) Config() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
address: %[3]s
port: %[4]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[5]d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[6]s}
authorization:
  mode: Webhook
failSwapOn: false
evictionHard: {memory.available: "100Mi", nodefs.available: "0%%", imagefs.available: "0%%", nodefs.inodesFree: "0%%", imagefs.inodesFree: "0%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: /etc/resolv.conf
podLogsDir: %[7]s
maxPods: 30
%[8]s`, k.CgroupRoot, k.ContainerdSocket, k.Address, k.Port, k.HealthzPort, k.ClientCAFile, k.PodLogsDir, k.Extra)
}
