package validation

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

// validTenantCluster is a TenantCluster as it looks after defaulting.
func validTenantCluster() *butler.TenantCluster {
	return &butler.TenantCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a", ResourceVersion: "1"},
		Spec: butler.TenantClusterSpec{
			KubernetesVersion: "v1.30.2",
			TeamRef:           &butler.LocalObjectReference{Name: "team-a"},
			ProviderConfigRef: &butler.NamespacedObjectReference{Name: "harvester", Namespace: "butler-system"},
			ControlPlane: butler.ControlPlaneSpec{
				Type:     butler.ControlPlaneHosted,
				Replicas: ptr.To[int32](1),
				CertSANs: []string{"prod.example.com"},
			},
			Workers: butler.WorkersSpec{
				Replicas: 3,
				MachineTemplate: butler.MachineTemplate{
					CPU:      ptr.To[int32](4),
					Memory:   ptr.To(resource.MustParse("16Gi")),
					DiskSize: ptr.To(resource.MustParse("100Gi")),
					OS:       butler.OSSpec{Type: butler.OSTalos},
				},
			},
			Networking: butler.NetworkingSpec{
				PodCIDR:     "10.244.0.0/16",
				ServiceCIDR: "10.96.0.0/12",
				LBPoolSize:  ptr.To[int32](8),
			},
			Addons: butler.AddonsSpec{
				CNI:          &butler.CNIAddon{Provider: "cilium", Values: raw(`{"hubble":{"enabled":true}}`)},
				LoadBalancer: &butler.LoadBalancerAddon{Provider: "metallb"},
				CertManager:  &butler.CertManagerAddon{Enabled: ptr.To(true)},
				Storage:      &butler.StorageAddon{Provider: "longhorn"},
				Ingress:      &butler.IngressAddon{Enabled: ptr.To(true), Provider: "traefik"},
				Gitops: &butler.GitOpsAddon{Provider: "fluxcd", Repository: &butler.GitRepository{
					URL: "https://github.com/example/fleet", SecretRef: &butler.LocalObjectReference{Name: "git-creds"},
				}},
			},
		},
	}
}

func standalone(o *butler.TenantCluster) {
	o.Spec.ControlPlane.Type = butler.ControlPlaneStandalone
	o.Spec.ControlPlane.MachineTemplate = &butler.MachineTemplate{CPU: ptr.To[int32](2), OS: butler.OSSpec{Type: butler.OSTalos}}
}

// TestTenantClusterHeadline is the example from the brief: three unrelated mistakes, three
// errors in one answer, each at its own path.
func TestTenantClusterHeadline(t *testing.T) {
	tc := validTenantCluster()
	tc.Spec.Networking.PodCIDR = "10.0.0.0/33"
	tc.Spec.Workers.MachineTemplate.OS.Type = butler.OSRocky
	tc.Spec.KubernetesVersion = "v1.31.0"
	tc.Spec.Workers.Replicas = -1
	errs := ValidateTenantCluster(tc)
	expectErrors(t, errs,
		invalid("spec.networking.podCIDR"),
		invalid("spec.kubernetesVersion"),
		invalid("spec.workers.replicas"),
	)
	expectDetail(t, errs, "spec.kubernetesVersion", "Rocky workers support Kubernetes up to v1.30.2")
	if len(errs) != 3 {
		t.Errorf("got %d errors, want 3", len(errs))
	}
}

func TestValidateTenantCluster(t *testing.T) {
	resources := func(req, limit string) *butler.ControlPlaneResources {
		return &butler.ControlPlaneResources{APIServer: &butler.ComponentResources{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limit)},
		}}
	}
	runCreateCases(t, validTenantCluster, ValidateTenantCluster, []createCase[butler.TenantCluster]{
		{"cluster scoped", func(o *butler.TenantCluster) { o.Namespace = "" }, []fieldErr{required("metadata.namespace")}},
		{"minimal", func(o *butler.TenantCluster) {
			o.Spec = butler.TenantClusterSpec{KubernetesVersion: "v1.31.0"}
		}, nil},

		{"missing version", func(o *butler.TenantCluster) { o.Spec.KubernetesVersion = "" }, []fieldErr{required("spec.kubernetesVersion")}},
		{"version without v", func(o *butler.TenantCluster) { o.Spec.KubernetesVersion = "1.30.2" }, []fieldErr{invalid("spec.kubernetesVersion")}},
		{"version without patch", func(o *butler.TenantCluster) { o.Spec.KubernetesVersion = "v1.30" }, []fieldErr{invalid("spec.kubernetesVersion")}},

		{"teamRef without name", func(o *butler.TenantCluster) { o.Spec.TeamRef.Name = "" }, []fieldErr{required("spec.teamRef.name")}},
		{"teamRef not a label", func(o *butler.TenantCluster) { o.Spec.TeamRef.Name = "Team_A" }, []fieldErr{invalid("spec.teamRef.name")}},
		{"providerConfigRef bad", func(o *butler.TenantCluster) {
			o.Spec.ProviderConfigRef.Name, o.Spec.ProviderConfigRef.Namespace = "", "Bad NS"
		}, []fieldErr{required("spec.providerConfigRef.name"), invalid("spec.providerConfigRef.namespace")}},

		{"unknown control plane type", func(o *butler.TenantCluster) { o.Spec.ControlPlane.Type = "managed" }, []fieldErr{notSupp("spec.controlPlane.type")}},
		{"unknown type gets no type-dependent errors", func(o *butler.TenantCluster) {
			o.Spec.ControlPlane.Type, o.Spec.ControlPlane.Replicas = "managed", ptr.To[int32](7)
			o.Spec.ControlPlane.MachineTemplate = &butler.MachineTemplate{}
		}, []fieldErr{notSupp("spec.controlPlane.type")}},
		{"hibernation with schedules", func(o *butler.TenantCluster) {
			o.Spec.Hibernation = &butler.HibernationSpec{Hibernated: true, WakeOnRequest: true,
				IdleTimeout: &metav1.Duration{Duration: 5 * time.Minute},
				Schedules: []butler.HibernationSchedule{
					{Start: "0 20 * * mon-fri", End: "0 7 * * mon-fri", Location: "Europe/Berlin"},
					{Start: "@daily"},
				}}
		}, nil},
		{"hibernation bad schedules", func(o *butler.TenantCluster) {
			o.Spec.Hibernation = &butler.HibernationSpec{Schedules: []butler.HibernationSchedule{
				{Start: "0 25 * * *", End: "CRON_TZ=UTC 0 7 * * *", Location: "Mars/Olympus"},
				{},
			}}
		}, []fieldErr{invalid("spec.hibernation.schedules[0].start"), invalid("spec.hibernation.schedules[0].end"),
			invalid("spec.hibernation.schedules[0].location"), required("spec.hibernation.schedules[1]")}},
		{"idle timeout without wake on request", func(o *butler.TenantCluster) {
			o.Spec.Hibernation = &butler.HibernationSpec{IdleTimeout: &metav1.Duration{Duration: time.Hour}}
		}, []fieldErr{invalid("spec.hibernation.idleTimeout")}},
		{"idle timeout too short", func(o *butler.TenantCluster) {
			o.Spec.Hibernation = &butler.HibernationSpec{WakeOnRequest: true, IdleTimeout: &metav1.Duration{Duration: time.Second}}
		}, []fieldErr{invalid("spec.hibernation.idleTimeout")}},
		// A woken cluster that never sleeps by idleness holds an awake-by-request slot for good.
		{"idle timeout of a year", func(o *butler.TenantCluster) {
			o.Spec.Hibernation = &butler.HibernationSpec{WakeOnRequest: true, IdleTimeout: &metav1.Duration{Duration: 8760 * time.Hour}}
		}, []fieldErr{invalid("spec.hibernation.idleTimeout")}},
		{"idle timeout of a day", func(o *butler.TenantCluster) {
			o.Spec.Hibernation = &butler.HibernationSpec{WakeOnRequest: true, IdleTimeout: &metav1.Duration{Duration: 24 * time.Hour}}
		}, nil},
		{"hosted 3 replicas", func(o *butler.TenantCluster) { o.Spec.ControlPlane.Replicas = ptr.To[int32](3) }, nil},
		{"hosted 0 replicas (stopped)", func(o *butler.TenantCluster) { o.Spec.ControlPlane.Replicas = ptr.To[int32](0) }, nil},
		{"hosted -1 replicas", func(o *butler.TenantCluster) { o.Spec.ControlPlane.Replicas = ptr.To[int32](-1) }, []fieldErr{invalid("spec.controlPlane.replicas")}},
		{"hosted 4 replicas", func(o *butler.TenantCluster) { o.Spec.ControlPlane.Replicas = ptr.To[int32](4) }, []fieldErr{invalid("spec.controlPlane.replicas")}},
		{"standalone 5 replicas", func(o *butler.TenantCluster) { standalone(o); o.Spec.ControlPlane.Replicas = ptr.To[int32](5) }, nil},
		{"standalone 2 replicas", func(o *butler.TenantCluster) { standalone(o); o.Spec.ControlPlane.Replicas = ptr.To[int32](2) }, []fieldErr{invalid("spec.controlPlane.replicas")}},
		{"standalone 4 replicas", func(o *butler.TenantCluster) { standalone(o); o.Spec.ControlPlane.Replicas = ptr.To[int32](4) }, []fieldErr{invalid("spec.controlPlane.replicas")}},
		{"service type override", func(o *butler.TenantCluster) { o.Spec.ControlPlane.ServiceType = butler.ExposureIngress }, nil},
		{"unknown service type", func(o *butler.TenantCluster) { o.Spec.ControlPlane.ServiceType = "NodePort" }, []fieldErr{notSupp("spec.controlPlane.serviceType")}},
		{"machineTemplate on hosted", func(o *butler.TenantCluster) {
			o.Spec.ControlPlane.MachineTemplate = &butler.MachineTemplate{CPU: ptr.To[int32](2)}
		}, []fieldErr{forbidden("spec.controlPlane.machineTemplate")}},
		{"standalone machineTemplate checked", func(o *butler.TenantCluster) {
			standalone(o)
			o.Spec.ControlPlane.MachineTemplate.CPU = ptr.To[int32](0)
			o.Spec.ControlPlane.MachineTemplate.OS.Type = "windows"
		}, []fieldErr{invalid("spec.controlPlane.machineTemplate.cpu"), notSupp("spec.controlPlane.machineTemplate.os.type")}},
		{"empty certSAN", func(o *butler.TenantCluster) { o.Spec.ControlPlane.CertSANs = []string{"a.example.com", ""} }, []fieldErr{required("spec.controlPlane.certSANs[1]")}},
		{"request above limit", func(o *butler.TenantCluster) { o.Spec.ControlPlane.Resources = resources("2", "1") }, []fieldErr{invalid("spec.controlPlane.resources.apiServer.requests[cpu]")}},
		{"request within limit", func(o *butler.TenantCluster) { o.Spec.ControlPlane.Resources = resources("500m", "1") }, nil},
		{"dataStoreRef without name", func(o *butler.TenantCluster) { o.Spec.ControlPlane.DataStoreRef = &butler.LocalObjectReference{} }, []fieldErr{required("spec.controlPlane.dataStoreRef.name")}},

		{"zero workers", func(o *butler.TenantCluster) { o.Spec.Workers.Replicas = 0 }, nil},
		{"negative workers", func(o *butler.TenantCluster) { o.Spec.Workers.Replicas = -1 }, []fieldErr{invalid("spec.workers.replicas")}},
		{"machine sizes", func(o *butler.TenantCluster) {
			mt := &o.Spec.Workers.MachineTemplate
			mt.CPU, mt.Memory, mt.DiskSize = ptr.To[int32](0), ptr.To(resource.MustParse("0")), ptr.To(resource.MustParse("-1Gi"))
		}, []fieldErr{
			invalid("spec.workers.machineTemplate.cpu"),
			invalid("spec.workers.machineTemplate.memory"),
			invalid("spec.workers.machineTemplate.diskSize"),
		}},
		{"unknown os", func(o *butler.TenantCluster) { o.Spec.Workers.MachineTemplate.OS.Type = "windows" }, []fieldErr{notSupp("spec.workers.machineTemplate.os.type")}},
		{"flatcar", func(o *butler.TenantCluster) { o.Spec.Workers.MachineTemplate.OS.Type = butler.OSFlatcar }, nil},
		{"bottlerocket accepted", func(o *butler.TenantCluster) { o.Spec.Workers.MachineTemplate.OS.Type = butler.OSBottlerocket }, nil},
		{"kairos accepted", func(o *butler.TenantCluster) { o.Spec.Workers.MachineTemplate.OS.Type = butler.OSKairos }, nil},
		{"rocky at v1.30.2", func(o *butler.TenantCluster) { o.Spec.Workers.MachineTemplate.OS.Type = butler.OSRocky }, nil},
		{"rocky at v1.29.9", func(o *butler.TenantCluster) {
			o.Spec.Workers.MachineTemplate.OS.Type, o.Spec.KubernetesVersion = butler.OSRocky, "v1.29.9"
		}, nil},
		{"rocky at v1.30.3", func(o *butler.TenantCluster) {
			o.Spec.Workers.MachineTemplate.OS.Type, o.Spec.KubernetesVersion = butler.OSRocky, "v1.30.3"
		}, []fieldErr{invalid("spec.kubernetesVersion")}},
		{"rocky standalone control plane at v1.31.0", func(o *butler.TenantCluster) {
			standalone(o)
			o.Spec.ControlPlane.MachineTemplate.OS.Type, o.Spec.KubernetesVersion = butler.OSRocky, "v1.31.0"
		}, []fieldErr{invalid("spec.kubernetesVersion")}},

		{"pod CIDR prefix too long", func(o *butler.TenantCluster) { o.Spec.Networking.PodCIDR = "10.0.0.0/33" }, []fieldErr{invalid("spec.networking.podCIDR")}},
		{"pod CIDR garbage", func(o *butler.TenantCluster) { o.Spec.Networking.PodCIDR = "pods" }, []fieldErr{invalid("spec.networking.podCIDR")}},
		{"pod CIDR not canonical", func(o *butler.TenantCluster) { o.Spec.Networking.PodCIDR = "10.244.1.0/16" }, []fieldErr{invalid("spec.networking.podCIDR")}},
		{"service CIDR garbage", func(o *butler.TenantCluster) { o.Spec.Networking.ServiceCIDR = "10.96.0.0" }, []fieldErr{invalid("spec.networking.serviceCIDR")}},
		{"CIDRs overlap", func(o *butler.TenantCluster) { o.Spec.Networking.ServiceCIDR = "10.244.128.0/20" }, []fieldErr{invalid("spec.networking.serviceCIDR")}},
		{"service CIDR contains pod CIDR", func(o *butler.TenantCluster) { o.Spec.Networking.ServiceCIDR = "10.0.0.0/8" }, []fieldErr{invalid("spec.networking.serviceCIDR")}},
		{"CIDRs of different families", func(o *butler.TenantCluster) { o.Spec.Networking.ServiceCIDR = "fd00:96::/108" }, []fieldErr{invalid("spec.networking.serviceCIDR")}},
		{"IPv6 cluster", func(o *butler.TenantCluster) {
			o.Spec.Networking.PodCIDR, o.Spec.Networking.ServiceCIDR = "fd00:244::/56", "fd00:96::/108"
		}, nil},
		{"explicit LB pool", func(o *butler.TenantCluster) {
			o.Spec.Networking.LBPoolSize = nil
			o.Spec.Networking.LoadBalancerPool = &butler.AddressRange{Start: "192.168.10.100", End: "192.168.10.120"}
		}, nil},
		{"LB pool reversed", func(o *butler.TenantCluster) {
			o.Spec.Networking.LBPoolSize = nil
			o.Spec.Networking.LoadBalancerPool = &butler.AddressRange{Start: "192.168.10.120", End: "192.168.10.100"}
		}, []fieldErr{invalid("spec.networking.loadBalancerPool.end")}},
		{"LB pool mixed families", func(o *butler.TenantCluster) {
			o.Spec.Networking.LBPoolSize = nil
			o.Spec.Networking.LoadBalancerPool = &butler.AddressRange{Start: "192.168.10.100", End: "fd00::10"}
		}, []fieldErr{invalid("spec.networking.loadBalancerPool.end")}},
		{"LB pool bad addresses", func(o *butler.TenantCluster) {
			o.Spec.Networking.LBPoolSize = nil
			o.Spec.Networking.LoadBalancerPool = &butler.AddressRange{Start: "192.168.10.300"}
		}, []fieldErr{invalid("spec.networking.loadBalancerPool.start"), required("spec.networking.loadBalancerPool.end")}},
		{"LB pool inside pod CIDR", func(o *butler.TenantCluster) {
			o.Spec.Networking.LBPoolSize = nil
			o.Spec.Networking.LoadBalancerPool = &butler.AddressRange{Start: "10.243.255.250", End: "10.244.0.10"}
		}, []fieldErr{invalid("spec.networking.loadBalancerPool")}},
		{"LB pool size zero", func(o *butler.TenantCluster) { o.Spec.Networking.LBPoolSize = ptr.To[int32](0) }, []fieldErr{invalid("spec.networking.lbPoolSize")}},
		{"LB pool and size", func(o *butler.TenantCluster) {
			o.Spec.Networking.LoadBalancerPool = &butler.AddressRange{Start: "192.168.10.100", End: "192.168.10.120"}
		}, []fieldErr{forbidden("spec.networking.lbPoolSize")}},

		{"no addons", func(o *butler.TenantCluster) { o.Spec.Addons = butler.AddonsSpec{} }, nil},
		{"empty providers mean defaults", func(o *butler.TenantCluster) {
			a := &o.Spec.Addons
			a.CNI.Provider, a.LoadBalancer.Provider, a.Storage.Provider, a.Ingress.Provider, a.Gitops.Provider = "", "", "", "", ""
		}, nil},
		{"alternative providers", func(o *butler.TenantCluster) {
			a := &o.Spec.Addons
			a.Storage.Provider, a.Ingress.Provider, a.Gitops.Provider = "linstor", "nginx", "argocd"
		}, nil},
		{"unknown providers", func(o *butler.TenantCluster) {
			a := &o.Spec.Addons
			a.CNI.Provider, a.LoadBalancer.Provider, a.Storage.Provider, a.Ingress.Provider, a.Gitops.Provider = "calico", "kube-vip", "ceph", "haproxy", "jenkins"
		}, []fieldErr{
			notSupp("spec.addons.cni.provider"),
			notSupp("spec.addons.loadBalancer.provider"),
			notSupp("spec.addons.storage.provider"),
			notSupp("spec.addons.ingress.provider"),
			notSupp("spec.addons.gitops.provider"),
		}},
		{"gitops repository without url", func(o *butler.TenantCluster) { o.Spec.Addons.Gitops.Repository.URL = "" }, []fieldErr{required("spec.addons.gitops.repository.url")}},
		{"gitops without repository", func(o *butler.TenantCluster) { o.Spec.Addons.Gitops.Repository = nil }, nil},
		{"gitops branch and path", gitRepo(func(r *butler.GitRepository) { r.Branch, r.Path = "release/1.2", "./clusters/prod" }), nil},
		{"gitops over ssh as a user", gitRepo(func(r *butler.GitRepository) { r.URL = "ssh://git@git.example.com/fleet.git" }), nil},
		{"gitops scp-like address", gitRepo(func(r *butler.GitRepository) { r.URL = "git@github.com:example/fleet.git" }),
			[]fieldErr{invalid("spec.addons.gitops.repository.url")}},
		{"gitops credential over http", gitRepo(func(r *butler.GitRepository) { r.URL = "http://git.example.com/fleet.git" }),
			[]fieldErr{forbidden("spec.addons.gitops.repository.secretRef")}},
		{"gitops over http without a credential", gitRepo(func(r *butler.GitRepository) { r.URL, r.SecretRef = "http://git.example.com/fleet.git", nil }), nil},
		{"gitops url of another scheme", gitRepo(func(r *butler.GitRepository) { r.URL = "file:///etc" }), []fieldErr{invalid("spec.addons.gitops.repository.url")}},
		{"gitops url with a token", gitRepo(func(r *butler.GitRepository) { r.URL = "https://x-token:ghp_secret@github.com/example/fleet" }),
			[]fieldErr{invalid("spec.addons.gitops.repository.url")}},
		{"gitops url with a user", gitRepo(func(r *butler.GitRepository) { r.URL = "https://ghp_secret@github.com/example/fleet" }),
			[]fieldErr{invalid("spec.addons.gitops.repository.url")}},
		{"gitops url with a query", gitRepo(func(r *butler.GitRepository) { r.URL = "https://github.com/example/fleet?ref=dev" }),
			[]fieldErr{invalid("spec.addons.gitops.repository.url")}},
		{"gitops bad branches", gitRepo(func(r *butler.GitRepository) { r.Branch = "a..b" }), []fieldErr{invalid("spec.addons.gitops.repository.branch")}},
		{"gitops branch with a space", gitRepo(func(r *butler.GitRepository) { r.Branch = "my branch" }), []fieldErr{invalid("spec.addons.gitops.repository.branch")}},
		{"gitops branch like an option", gitRepo(func(r *butler.GitRepository) { r.Branch = "--upload-pack=x" }), []fieldErr{invalid("spec.addons.gitops.repository.branch")}},
		{"gitops branch .lock", gitRepo(func(r *butler.GitRepository) { r.Branch = "main.lock" }), []fieldErr{invalid("spec.addons.gitops.repository.branch")}},
		{"gitops branch too long", gitRepo(func(r *butler.GitRepository) { r.Branch = strings.Repeat("b", 256) }), []fieldErr{tooLong("spec.addons.gitops.repository.branch")}},
		{"gitops path outside", gitRepo(func(r *butler.GitRepository) { r.Path = "./clusters/../../etc" }), []fieldErr{invalid("spec.addons.gitops.repository.path")}},
		{"gitops path absolute", gitRepo(func(r *butler.GitRepository) { r.Path = "/etc" }), []fieldErr{invalid("spec.addons.gitops.repository.path")}},
		{"gitops path with a newline", gitRepo(func(r *butler.GitRepository) { r.Path = "a\nb" }), []fieldErr{invalid("spec.addons.gitops.repository.path")}},
		{"gitops secretRef not a name", gitRepo(func(r *butler.GitRepository) { r.SecretRef.Name = "Git_Creds" }), []fieldErr{invalid("spec.addons.gitops.repository.secretRef.name")}},
		{"values not an object", func(o *butler.TenantCluster) {
			o.Spec.Addons.CNI.Values = raw(`[1,2]`)
			o.Spec.Addons.Storage.Values = raw(`"replicas: 3"`)
		}, []fieldErr{invalid("spec.addons.cni.values"), invalid("spec.addons.storage.values")}},
	})
}

func TestValidateTenantClusterUpdate(t *testing.T) {
	version := func(v string) func(*butler.TenantCluster) {
		return func(o *butler.TenantCluster) { o.Spec.KubernetesVersion = v }
	}
	runUpdateCases(t, validTenantCluster, ValidateTenantClusterUpdate, []updateCase[butler.TenantCluster]{
		{"scale workers", func(o *butler.TenantCluster) { o.Spec.Workers.Replicas = 10 }, nil},
		{"patch upgrade", version("v1.30.5"), nil},
		{"minor upgrade", version("v1.31.0"), nil},
		{"minor upgrade to a later patch", version("v1.31.4"), nil},
		{"patch downgrade", version("v1.30.1"), []fieldErr{invalid("spec.kubernetesVersion")}},
		{"minor downgrade", version("v1.29.9"), []fieldErr{invalid("spec.kubernetesVersion")}},
		{"minor skip", version("v1.32.0"), []fieldErr{invalid("spec.kubernetesVersion")}},
		{"major change", version("v2.0.0"), []fieldErr{invalid("spec.kubernetesVersion")}},
		{"malformed version", version("latest"), []fieldErr{invalid("spec.kubernetesVersion")}},
		{"control plane type", standalone, []fieldErr{invalid("spec.controlPlane.type")}},
		{"pod CIDR", func(o *butler.TenantCluster) { o.Spec.Networking.PodCIDR = "10.245.0.0/16" }, []fieldErr{invalid("spec.networking.podCIDR")}},
		{"service CIDR", func(o *butler.TenantCluster) { o.Spec.Networking.ServiceCIDR = "10.112.0.0/12" }, []fieldErr{invalid("spec.networking.serviceCIDR")}},
		{"worker OS", func(o *butler.TenantCluster) { o.Spec.Workers.MachineTemplate.OS.Type = butler.OSFlatcar }, []fieldErr{invalid("spec.workers.machineTemplate.os.type")}},
		{"worker OS version may change", func(o *butler.TenantCluster) { o.Spec.Workers.MachineTemplate.OS.Version = "v1.8.0" }, nil},
		{"namespace", func(o *butler.TenantCluster) { o.Namespace = "team-b" }, []fieldErr{invalid("metadata.namespace")}},
	})
}

func TestTenantClusterUpdateMessages(t *testing.T) {
	old := validTenantCluster()
	old.Spec.KubernetesVersion = "v1.29.0"
	tc := validTenantCluster()
	tc.Spec.KubernetesVersion = "v1.31.0"
	expectDetail(t, ValidateTenantClusterUpdate(tc, old), "spec.kubernetesVersion", "v1.29.0", "v1.31.0", "one minor version at a time")

	tc.Spec.KubernetesVersion = "v1.28.3"
	expectDetail(t, ValidateTenantClusterUpdate(tc, old), "spec.kubernetesVersion", "v1.29.0", "v1.28.3", "downgraded")

	tc = validTenantCluster()
	tc.Spec.Networking.PodCIDR = "10.245.0.0/16"
	expectDetail(t, ValidateTenantClusterUpdate(tc, validTenantCluster()), "spec.networking.podCIDR", "field is immutable")
}

func TestValidateTenantClusterStatusUpdate(t *testing.T) {
	runUpdateCases(t, validTenantCluster, ValidateTenantClusterStatusUpdate, []updateCase[butler.TenantCluster]{
		{"ready", func(o *butler.TenantCluster) {
			o.Status = butler.TenantClusterStatus{
				Phase: butler.TenantClusterReady, ObservedGeneration: 3, TenantNamespace: "team-a-prod",
				ControlPlaneEndpoint: "https://10.0.0.10:6443",
				IPAllocationRefs:     []butler.LocalObjectReference{{Name: "prod-nodes"}},
				ObservedState:        &butler.ObservedClusterState{KubernetesVersion: "v1.30.2", Workers: butler.WorkerCounts{Desired: 3, Ready: 2}},
			}
		}, nil},
		{"unknown phase", func(o *butler.TenantCluster) { o.Status.Phase = "Running" }, []fieldErr{notSupp("status.phase")}},
		{"negative counts", func(o *butler.TenantCluster) {
			o.Status.ObservedGeneration = -1
			o.Status.ObservedState = &butler.ObservedClusterState{Workers: butler.WorkerCounts{Desired: -1, Ready: -1}}
		}, []fieldErr{
			invalid("status.observedGeneration"),
			invalid("status.observedState.workers.desired"),
			invalid("status.observedState.workers.ready"),
		}},
		{"bad refs", func(o *butler.TenantCluster) {
			o.Status.IPAllocationRefs = []butler.LocalObjectReference{{Name: "ok"}, {}}
		}, []fieldErr{required("status.ipAllocationRefs[1].name")}},
		{"credentials", func(o *butler.TenantCluster) {
			o.Status.Credentials = &butler.TenantCredentialsStatus{
				Expiry:   []butler.CredentialExpiry{{Name: "ca"}, {Name: "apiserver"}},
				Rotation: &butler.CredentialsRotation{Phase: butler.RotationPrepared},
			}
		}, nil},
		{"bad credentials", func(o *butler.TenantCluster) {
			o.Status.Credentials = &butler.TenantCredentialsStatus{
				Expiry:   []butler.CredentialExpiry{{Name: "ca"}, {Name: "ca"}, {}},
				Rotation: &butler.CredentialsRotation{Phase: "Halfway"},
			}
		}, []fieldErr{dup("status.credentials.expiry[1].name"), required("status.credentials.expiry[2].name"), notSupp("status.credentials.rotation.phase")}},
	})
}

// The operation annotation: a known operation; a rotation starts when none is under way and
// completes once Prepared.
func TestValidateTenantClusterOperation(t *testing.T) {
	const key = "metadata.annotations[butler.butlerlabs.dev/operation]"
	withOp := func(op string, phase butler.CredentialsRotationPhase) (*butler.TenantCluster, *butler.TenantCluster) {
		old := validTenantCluster()
		if phase != "" {
			old.Status.Credentials = &butler.TenantCredentialsStatus{Rotation: &butler.CredentialsRotation{Phase: phase}}
		}
		obj := old.DeepCopy()
		obj.Annotations = map[string]string{butler.OperationAnnotation: op}
		return obj, old
	}
	for _, c := range []struct {
		op    string
		phase butler.CredentialsRotationPhase
		want  []fieldErr
	}{
		{butler.OperationRotateCredentialsStart, "", nil},
		{butler.OperationRotateCredentialsStart, butler.RotationCompleted, nil},
		{butler.OperationRotateCredentialsStart, butler.RotationPrepared, []fieldErr{invalid(key)}},
		{butler.OperationRotateCredentialsComplete, butler.RotationPrepared, nil},
		{butler.OperationRotateCredentialsComplete, butler.RotationPreparing, []fieldErr{invalid(key)}},
		{butler.OperationRotateCredentialsComplete, "", []fieldErr{invalid(key)}},
		{"rotate-everything", "", []fieldErr{notSupp(key)}},
	} {
		obj, old := withOp(c.op, c.phase)
		t.Run(c.op+"/"+string(c.phase), func(t *testing.T) { expectErrors(t, ValidateTenantClusterUpdate(obj, old), c.want...) })
	}
	obj, _ := withOp(butler.OperationRotateCredentialsComplete, "")
	expectErrors(t, ValidateTenantCluster(obj), invalid(key))
}

func TestTenantClusterWarnings(t *testing.T) {
	for osType, want := range map[butler.OSType][]string{
		butler.OSTalos:        nil,
		butler.OSRocky:        nil,
		butler.OSFlatcar:      nil,
		butler.OSBottlerocket: {"spec.workers.machineTemplate.os.type: bottlerocket workers are accepted but not yet proven end to end"},
		butler.OSKairos:       {"spec.workers.machineTemplate.os.type: kairos workers are accepted but not yet proven end to end"},
	} {
		tc := validTenantCluster()
		tc.Spec.Workers.MachineTemplate.OS.Type = osType
		if got := TenantClusterWarnings(tc); !slices.Equal(got, want) {
			t.Errorf("TenantClusterWarnings(%s) = %q, want %q", osType, got, want)
		}
	}

	tc := validTenantCluster()
	standalone(tc)
	tc.Spec.ControlPlane.MachineTemplate.OS.Type = butler.OSKairos
	if got := TenantClusterWarnings(tc); len(got) != 1 {
		t.Errorf("standalone kairos control plane: warnings = %q, want one", got)
	}
}

// gitRepo edits the valid cluster's spec.addons.gitops.repository.
func gitRepo(edit func(*butler.GitRepository)) func(*butler.TenantCluster) {
	return func(o *butler.TenantCluster) { edit(o.Spec.Addons.Gitops.Repository) }
}
