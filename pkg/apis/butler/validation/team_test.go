package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func validButlerConfig() *butler.ButlerConfig {
	return &butler.ButlerConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "butler", ResourceVersion: "1"},
		Spec: butler.ButlerConfigSpec{
			MultiTenancy:             butler.MultiTenancyConfig{Mode: butler.MultiTenancyEnforced},
			DefaultNamespace:         "butler-tenants",
			DefaultProviderConfigRef: &butler.NamespacedObjectReference{Name: "harvester", Namespace: "butler-system"},
			DefaultTeamLimits: &butler.ResourceLimits{
				MaxClusters:    ptr.To[int32](10),
				MaxTotalCPU:    ptr.To(resource.MustParse("200")),
				MaxTotalMemory: ptr.To(resource.MustParse("1Ti")),
			},
			ControlPlaneExposure: butler.ControlPlaneExposure{Mode: butler.ExposureLoadBalancer},
		},
	}
}

func TestValidateButlerConfig(t *testing.T) {
	runCreateCases(t, validButlerConfig, ValidateButlerConfig, []createCase[butler.ButlerConfig]{
		{"name other than butler", func(o *butler.ButlerConfig) { o.Name = "platform" }, []fieldErr{invalid("metadata.name")}},
		{"namespaced", func(o *butler.ButlerConfig) { o.Namespace = "default" }, []fieldErr{forbidden("metadata.namespace")}},
		{"empty modes mean defaults", func(o *butler.ButlerConfig) {
			o.Spec.MultiTenancy.Mode, o.Spec.ControlPlaneExposure.Mode, o.Spec.DefaultNamespace = "", "", ""
		}, nil},
		{"unknown tenancy mode", func(o *butler.ButlerConfig) { o.Spec.MultiTenancy.Mode = "Strict" }, []fieldErr{notSupp("spec.multiTenancy.mode")}},
		{"unknown exposure mode", func(o *butler.ButlerConfig) { o.Spec.ControlPlaneExposure.Mode = "NodePort" }, []fieldErr{notSupp("spec.controlPlaneExposure.mode")}},
		{"ingress without hostname", func(o *butler.ButlerConfig) { o.Spec.ControlPlaneExposure.Mode = butler.ExposureIngress }, []fieldErr{required("spec.controlPlaneExposure.hostname")}},
		{"gateway without hostname", func(o *butler.ButlerConfig) { o.Spec.ControlPlaneExposure.Mode = butler.ExposureGateway }, []fieldErr{required("spec.controlPlaneExposure.hostname")}},
		{"ingress with hostname", func(o *butler.ButlerConfig) {
			o.Spec.ControlPlaneExposure = butler.ControlPlaneExposure{Mode: butler.ExposureIngress, Hostname: "k8s.example.com", IngressClassName: "nginx"}
		}, nil},
		{"gateway with wildcard hostname", func(o *butler.ButlerConfig) {
			o.Spec.ControlPlaneExposure = butler.ControlPlaneExposure{Mode: butler.ExposureGateway, Hostname: "*.k8s.example.com", GatewayRef: &butler.NamespacedObjectReference{Name: "gw", Namespace: "infra"}}
		}, nil},
		{"bad hostname", func(o *butler.ButlerConfig) { o.Spec.ControlPlaneExposure.Hostname = "Not_A_Host" }, []fieldErr{invalid("spec.controlPlaneExposure.hostname")}},
		{"gatewayRef without name", func(o *butler.ButlerConfig) {
			o.Spec.ControlPlaneExposure.GatewayRef = &butler.NamespacedObjectReference{}
		}, []fieldErr{required("spec.controlPlaneExposure.gatewayRef.name")}},
		{"defaultNamespace not a DNS label", func(o *butler.ButlerConfig) { o.Spec.DefaultNamespace = "Butler_Tenants" }, []fieldErr{invalid("spec.defaultNamespace")}},
		{"defaultProviderConfigRef without name", func(o *butler.ButlerConfig) { o.Spec.DefaultProviderConfigRef.Name = "" }, []fieldErr{required("spec.defaultProviderConfigRef.name")}},
		{"defaultTeamLimits validated like a Team's", func(o *butler.ButlerConfig) {
			o.Spec.DefaultTeamLimits.MaxClusters = ptr.To[int32](-1)
			o.Spec.DefaultTeamLimits.AllowedProviders = []string{"vsphere"}
		}, []fieldErr{invalid("spec.defaultTeamLimits.maxClusters"), notSupp("spec.defaultTeamLimits.allowedProviders[0]")}},
		{"controlPlaneProviderNamespaces", func(o *butler.ButlerConfig) {
			o.Spec.ControlPlaneProviderNamespaces = []string{"steward-system", "capi-steward-system"}
		}, nil},
		{"controlPlaneProviderNamespaces not namespaces, or twice", func(o *butler.ButlerConfig) {
			o.Spec.ControlPlaneProviderNamespaces = []string{"steward-system", "", "Steward_System", "steward-system"}
		}, []fieldErr{required("spec.controlPlaneProviderNamespaces[1]"), invalid("spec.controlPlaneProviderNamespaces[2]"), dup("spec.controlPlaneProviderNamespaces[3]")}},
		{"all errors at once", func(o *butler.ButlerConfig) {
			o.Name = "config"
			o.Spec.MultiTenancy.Mode = "Sometimes"
			o.Spec.ControlPlaneExposure.Mode = butler.ExposureIngress
		}, []fieldErr{invalid("metadata.name"), notSupp("spec.multiTenancy.mode"), required("spec.controlPlaneExposure.hostname")}},
	})
}

func TestValidateButlerConfigUpdate(t *testing.T) {
	runUpdateCases(t, validButlerConfig, ValidateButlerConfigUpdate, []updateCase[butler.ButlerConfig]{
		{"change mode", func(o *butler.ButlerConfig) { o.Spec.MultiTenancy.Mode = butler.MultiTenancyOptional }, nil},
		{"rename", func(o *butler.ButlerConfig) { o.Name = "other" }, []fieldErr{invalid("metadata.name")}},
		{"spec rules apply", func(o *butler.ButlerConfig) { o.Spec.ControlPlaneExposure.Mode = butler.ExposureGateway }, []fieldErr{required("spec.controlPlaneExposure.hostname")}},
	})
}

func TestValidateButlerConfigStatusUpdate(t *testing.T) {
	runUpdateCases(t, validButlerConfig, ValidateButlerConfigStatusUpdate, []updateCase[butler.ButlerConfig]{
		{"counts", func(o *butler.ButlerConfig) {
			o.Status = butler.ButlerConfigStatus{TeamCount: 3, ClusterCount: 7, ControlPlaneExposureMode: butler.ExposureIngress}
		}, nil},
		{"negative counts", func(o *butler.ButlerConfig) { o.Status.TeamCount, o.Status.ClusterCount = -1, -2 },
			[]fieldErr{invalid("status.teamCount"), invalid("status.clusterCount")}},
		{"unknown exposure mode", func(o *butler.ButlerConfig) { o.Status.ControlPlaneExposureMode = "Tunnel" }, []fieldErr{notSupp("status.controlPlaneExposureMode")}},
	})
}

func validTeam() *butler.Team {
	return &butler.Team{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", ResourceVersion: "1"},
		Spec: butler.TeamSpec{
			DisplayName: "Team A",
			Access: butler.TeamAccess{
				Users: []butler.TeamMember{
					{Name: "alice@example.com", Role: butler.TeamRoleAdmin},
					{Name: "bob@example.com", Role: butler.TeamRoleMember},
					{Name: "carol@example.com", Role: butler.TeamRoleViewer},
				},
				Groups: []butler.TeamMember{{Name: "platform-ops", Role: butler.TeamRoleOperator}},
			},
			ResourceLimits: &butler.ResourceLimits{
				MaxClusters:               ptr.To[int32](5),
				MaxWorkersPerCluster:      ptr.To[int32](0),
				MaxTotalWorkers:           ptr.To[int32](20),
				MaxTotalCPU:               ptr.To(resource.MustParse("200")),
				MaxTotalMemory:            ptr.To(resource.MustParse("1Ti")),
				MaxTotalStorage:           ptr.To(resource.MustParse("0")),
				AllowedKubernetesVersions: []string{"v1.30", "v1.31.2"},
				AllowedProviders:          []string{"harvester", "local"},
				AllowedAddons:             []string{"cilium", "longhorn"},
				DeniedAddons:              []string{"linstor"},
			},
			ProviderConfigRef: &butler.NamespacedObjectReference{Name: "harvester", Namespace: "butler-system"},
			ClusterDefaults: &butler.ClusterDefaults{
				KubernetesVersion: "v1.30.2",
				WorkerCount:       ptr.To[int32](0),
				WorkerCPU:         ptr.To[int32](4),
				WorkerMemory:      ptr.To(resource.MustParse("16Gi")),
				WorkerDisk:        ptr.To(resource.MustParse("100Gi")),
				DefaultAddons:     []string{"cilium"},
			},
		},
	}
}

func TestValidateTeam(t *testing.T) {
	runCreateCases(t, validTeam, ValidateTeam, []createCase[butler.Team]{
		{"name is a subdomain, not a label", func(o *butler.Team) { o.Name = "team.a" }, []fieldErr{invalid("metadata.name")}},
		{"name with capitals", func(o *butler.Team) { o.Name = "Team_A" }, []fieldErr{invalid("metadata.name")}},
		{"cluster scoped", func(o *butler.Team) { o.Namespace = "default" }, []fieldErr{forbidden("metadata.namespace")}},
		{"unknown role", func(o *butler.Team) { o.Spec.Access.Users[2].Role = "owner" }, []fieldErr{notSupp("spec.access.users[2].role")}},
		{"empty role defaults to viewer", func(o *butler.Team) { o.Spec.Access.Groups[0].Role = "" }, nil},
		{"duplicate user", func(o *butler.Team) { o.Spec.Access.Users[2].Name = "alice@example.com" }, []fieldErr{dup("spec.access.users[2].name")}},
		{"user without name", func(o *butler.Team) { o.Spec.Access.Users[1].Name = "" }, []fieldErr{required("spec.access.users[1].name")}},
		{"duplicate group", func(o *butler.Team) {
			o.Spec.Access.Groups = append(o.Spec.Access.Groups, butler.TeamMember{Name: "platform-ops", Role: butler.TeamRoleViewer})
		}, []fieldErr{dup("spec.access.groups[1].name")}},
		{"same name as user and group", func(o *butler.Team) {
			o.Spec.Access.Groups = append(o.Spec.Access.Groups, butler.TeamMember{Name: "alice@example.com"})
		}, nil},
		{"negative counts", func(o *butler.Team) {
			l := o.Spec.ResourceLimits
			l.MaxClusters, l.MaxWorkersPerCluster, l.MaxTotalWorkers = ptr.To[int32](-1), ptr.To[int32](-1), ptr.To[int32](-1)
		}, []fieldErr{
			invalid("spec.resourceLimits.maxClusters"),
			invalid("spec.resourceLimits.maxWorkersPerCluster"),
			invalid("spec.resourceLimits.maxTotalWorkers"),
		}},
		{"negative quantities", func(o *butler.Team) {
			l := o.Spec.ResourceLimits
			l.MaxTotalCPU, l.MaxTotalMemory, l.MaxTotalStorage = ptr.To(resource.MustParse("-1")), ptr.To(resource.MustParse("-1Gi")), ptr.To(resource.MustParse("-5Ti"))
		}, []fieldErr{
			invalid("spec.resourceLimits.maxTotalCPU"),
			invalid("spec.resourceLimits.maxTotalMemory"),
			invalid("spec.resourceLimits.maxTotalStorage"),
		}},
		{"unknown provider", func(o *butler.Team) { o.Spec.ResourceLimits.AllowedProviders[1] = "vsphere" }, []fieldErr{notSupp("spec.resourceLimits.allowedProviders[1]")}},
		{"bad versions", func(o *butler.Team) {
			o.Spec.ResourceLimits.AllowedKubernetesVersions = []string{"v1.30", "1.30", "latest", "v1", "v1.30.2.1", "v1.29.0"}
		}, []fieldErr{
			invalid("spec.resourceLimits.allowedKubernetesVersions[1]"),
			invalid("spec.resourceLimits.allowedKubernetesVersions[2]"),
			invalid("spec.resourceLimits.allowedKubernetesVersions[3]"),
			invalid("spec.resourceLimits.allowedKubernetesVersions[4]"),
		}},
		{"addon allowed and denied", func(o *butler.Team) { o.Spec.ResourceLimits.DeniedAddons = []string{"traefik", "longhorn"} }, []fieldErr{invalid("spec.resourceLimits.deniedAddons[1]")}},
		{"empty addon entry", func(o *butler.Team) { o.Spec.ResourceLimits.AllowedAddons = []string{""} }, []fieldErr{required("spec.resourceLimits.allowedAddons[0]")}},
		{"providerConfigRef without name", func(o *butler.Team) { o.Spec.ProviderConfigRef.Name = "" }, []fieldErr{required("spec.providerConfigRef.name")}},
		{"bad cluster defaults", func(o *butler.Team) {
			d := o.Spec.ClusterDefaults
			d.KubernetesVersion = "v1.30"
			d.WorkerCount = ptr.To[int32](-1)
			d.WorkerCPU = ptr.To[int32](0)
			d.WorkerMemory = ptr.To(resource.MustParse("0"))
			d.WorkerDisk = ptr.To(resource.MustParse("-1Gi"))
		}, []fieldErr{
			invalid("spec.clusterDefaults.kubernetesVersion"),
			invalid("spec.clusterDefaults.workerCount"),
			invalid("spec.clusterDefaults.workerCPU"),
			invalid("spec.clusterDefaults.workerMemory"),
			invalid("spec.clusterDefaults.workerDisk"),
		}},
		{"no limits or defaults at all", func(o *butler.Team) { o.Spec = butler.TeamSpec{} }, nil},
	})
}

func TestValidateTeamUpdate(t *testing.T) {
	runUpdateCases(t, validTeam, ValidateTeamUpdate, []updateCase[butler.Team]{
		{"add member", func(o *butler.Team) {
			o.Spec.Access.Users = append(o.Spec.Access.Users, butler.TeamMember{Name: "dave@example.com", Role: butler.TeamRoleViewer})
		}, nil},
		{"rename", func(o *butler.Team) { o.Name = "team-b" }, []fieldErr{invalid("metadata.name")}},
		{"spec rules apply", func(o *butler.Team) { o.Spec.Access.Users[0].Role = "root" }, []fieldErr{notSupp("spec.access.users[0].role")}},
	})
}

func TestValidateTeamStatusUpdate(t *testing.T) {
	runUpdateCases(t, validTeam, ValidateTeamStatusUpdate, []updateCase[butler.Team]{
		{"ready", func(o *butler.Team) {
			o.Status = butler.TeamStatus{
				Phase: butler.TeamPhaseReady, Namespace: "team-a", ClusterCount: 2, MemberCount: 4, QuotaStatus: "Warning",
				ResourceUsage: &butler.ResourceUsage{Clusters: 2, Nodes: 6, CPU: ptr.To(resource.MustParse("24"))},
			}
		}, nil},
		{"unknown phase", func(o *butler.Team) { o.Status.Phase = "Active" }, []fieldErr{notSupp("status.phase")}},
		{"unknown quota status", func(o *butler.Team) { o.Status.QuotaStatus = "Over" }, []fieldErr{notSupp("status.quotaStatus")}},
		{"negative counts", func(o *butler.Team) {
			o.Status.ClusterCount, o.Status.MemberCount = -1, -1
			o.Status.ResourceUsage = &butler.ResourceUsage{Nodes: -1, Memory: ptr.To(resource.MustParse("-1Gi"))}
		}, []fieldErr{
			invalid("status.clusterCount"), invalid("status.memberCount"),
			invalid("status.resourceUsage.nodes"), invalid("status.resourceUsage.memory"),
		}},
		{"spec is not checked on status writes", func(o *butler.Team) { o.Spec.Access.Users[0].Role = "root" }, nil},
	})
}
