package validation

import (
	"fmt"
	"net/netip"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

const (
	// Proxmox VM ids below 100 are reserved by Proxmox itself; the upper bound is its maximum.
	proxmoxMinVMID = 100
	proxmoxMaxVMID = 999999999
)

var (
	networkModes      = sets.New(butler.NetworkModeIPAM, butler.NetworkModeCloud)
	lbAllocationModes = sets.New(butler.LBAllocationStatic, butler.LBAllocationElastic)
	scopeTypes        = sets.New(butler.ScopePlatform, butler.ScopeTeam)
	localNodeTypes    = sets.New(butler.LocalNodeKwok, butler.LocalNodeReal)
)

// ValidateProviderConfig validates a ProviderConfig on create.
func ValidateProviderConfig(obj *butler.ProviderConfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateProviderConfigSpec(&obj.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateProviderConfigUpdate validates a ProviderConfig on update.
func ValidateProviderConfigUpdate(obj, old *butler.ProviderConfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateProviderConfigSpec(&obj.Spec, field.NewPath("spec"))...)
	if localNodeType(&obj.Spec) != localNodeType(&old.Spec) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "local", "nodeType"), obj.Spec.Local,
			"field is immutable: the clusters on this ProviderConfig made their machines with it (make another ProviderConfig)"))
	}
	return allErrs
}

// localNodeType is spec.local.nodeType, kwok when unset.
func localNodeType(spec *butler.ProviderConfigSpec) butler.LocalNodeType {
	if spec.Local == nil || spec.Local.NodeType == "" {
		return butler.LocalNodeKwok
	}
	return spec.Local.NodeType
}

// ValidateProviderConfigStatusUpdate validates a write to ProviderConfig's status subresource.
func ValidateProviderConfigStatusUpdate(obj, old *butler.ProviderConfig) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	allErrs = append(allErrs, validateMinimum(obj.Status.ObservedGeneration, 0, statusPath.Child("observedGeneration"))...)
	if c := obj.Status.Capacity; c != nil {
		capPath := statusPath.Child("capacity")
		allErrs = append(allErrs, validateMinimum(c.AvailableIPs, 0, capPath.Child("availableIPs"))...)
		allErrs = append(allErrs, validateMinimum(c.EstimatedTenants, 0, capPath.Child("estimatedTenants"))...)
	}
	return allErrs
}

func validateProviderConfigSpec(spec *butler.ProviderConfigSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateRequiredEnum(spec.Provider, providerTypes, fldPath.Child("provider"))

	credPath := fldPath.Child("credentialsRef")
	if ref := spec.CredentialsRef; ref != nil {
		allErrs = append(allErrs, validateDNSSubdomain(ref.Name, credPath.Child("name"))...)
		allErrs = append(allErrs, validateOptionalDNSLabel(ref.Namespace, credPath.Child("namespace"))...)
		if ref.Key != "" {
			for _, msg := range utilvalidation.IsConfigMapKey(ref.Key) {
				allErrs = append(allErrs, field.Invalid(credPath.Child("key"), ref.Key, msg))
			}
		}
	} else if providerTypes.Has(spec.Provider) && spec.Provider != butler.ProviderLocal {
		allErrs = append(allErrs, field.Required(credPath, fmt.Sprintf("a Secret with %s credentials is required unless provider is local", spec.Provider)))
	}

	allErrs = append(allErrs, validateProviderBlocks(spec, fldPath)...)
	allErrs = append(allErrs, validateProviderNetwork(&spec.Network, fldPath.Child("network"))...)

	scopePath := fldPath.Child("scope")
	allErrs = append(allErrs, validateOptionalEnum(spec.Scope.Type, scopeTypes, scopePath.Child("type"))...)
	switch {
	case spec.Scope.Type == butler.ScopeTeam && spec.Scope.TeamRef == nil:
		allErrs = append(allErrs, field.Required(scopePath.Child("teamRef"), "required when type is team"))
	case (spec.Scope.Type == "" || spec.Scope.Type == butler.ScopePlatform) && spec.Scope.TeamRef != nil:
		allErrs = append(allErrs, field.Forbidden(scopePath.Child("teamRef"), "may only be set when type is team"))
	}
	allErrs = append(allErrs, validateLocalRef(spec.Scope.TeamRef, utilvalidation.IsDNS1123Label, scopePath.Child("teamRef"))...)

	if l := spec.Limits; l != nil {
		limitsPath := fldPath.Child("limits")
		allErrs = append(allErrs, validateOptionalMinimum(l.MaxClustersPerTeam, 1, limitsPath.Child("maxClustersPerTeam"))...)
		allErrs = append(allErrs, validateOptionalMinimum(l.MaxNodesPerTeam, 1, limitsPath.Child("maxNodesPerTeam"))...)
	}
	return allErrs
}

// validateProviderBlocks requires the settings block of the chosen provider (local's is
// optional: every setting of it has a default) and forbids the others, which would otherwise be
// silently ignored.
func validateProviderBlocks(spec *butler.ProviderConfigSpec, fldPath *field.Path) field.ErrorList {
	blocks := []struct {
		provider butler.ProviderType
		set      bool
		validate func(*field.Path) field.ErrorList
		optional bool
	}{
		{butler.ProviderHarvester, spec.Harvester != nil, func(p *field.Path) field.ErrorList { return validateHarvester(spec.Harvester, p) }, false},
		{butler.ProviderNutanix, spec.Nutanix != nil, func(p *field.Path) field.ErrorList { return validateNutanix(spec.Nutanix, p) }, false},
		{butler.ProviderProxmox, spec.Proxmox != nil, func(p *field.Path) field.ErrorList { return validateProxmox(spec.Proxmox, p) }, false},
		{butler.ProviderAWS, spec.AWS != nil, func(p *field.Path) field.ErrorList { return validateAWS(spec.AWS, p) }, false},
		{butler.ProviderAzure, spec.Azure != nil, func(p *field.Path) field.ErrorList { return validateAzure(spec.Azure, p) }, false},
		{butler.ProviderGCP, spec.GCP != nil, func(p *field.Path) field.ErrorList { return validateGCP(spec.GCP, p) }, false},
		{butler.ProviderLocal, spec.Local != nil, func(p *field.Path) field.ErrorList { return validateLocal(spec.Local, p) }, true},
	}
	var allErrs field.ErrorList
	for _, b := range blocks {
		p := fldPath.Child(string(b.provider))
		switch {
		case b.provider == spec.Provider && !b.set && b.optional:
		case b.provider == spec.Provider && !b.set:
			allErrs = append(allErrs, field.Required(p, fmt.Sprintf("required when provider is %s", spec.Provider)))
		case b.provider == spec.Provider:
			allErrs = append(allErrs, b.validate(p)...)
		case b.set && providerTypes.Has(spec.Provider):
			allErrs = append(allErrs, field.Forbidden(p, fmt.Sprintf("may only be set when provider is %s, not %s", b.provider, spec.Provider)))
		}
	}
	return allErrs
}

// validateLocal checks the local provider's block; its node types are the ones the local
// provider's LocalMachines boot.
func validateLocal(l *butler.LocalConfig, fldPath *field.Path) field.ErrorList {
	return validateOptionalEnum(l.NodeType, localNodeTypes, fldPath.Child("nodeType"))
}

func validateHarvester(h *butler.HarvesterConfig, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if h.Endpoint != "" {
		allErrs = append(allErrs, validateURL(h.Endpoint, httpSchemes, fldPath.Child("endpoint"))...)
	}
	allErrs = append(allErrs, validateOptionalDNSLabel(h.Namespace, fldPath.Child("namespace"))...)
	netPath := fldPath.Child("networkName")
	if h.NetworkName == "" {
		allErrs = append(allErrs, field.Required(netPath, "must be namespace/name of a Harvester VM network"))
	} else {
		ns, name, ok := strings.Cut(h.NetworkName, "/")
		if !ok || strings.Contains(name, "/") ||
			len(utilvalidation.IsDNS1123Label(ns)) > 0 || len(utilvalidation.IsDNS1123Subdomain(name)) > 0 {
			allErrs = append(allErrs, field.Invalid(netPath, h.NetworkName, "must be namespace/name of a Harvester VM network, e.g. default/vlan100"))
		}
	}
	return allErrs
}

func validateNutanix(n *butler.NutanixConfig, fldPath *field.Path) field.ErrorList {
	allErrs := validateURL(n.Endpoint, httpSchemes, fldPath.Child("endpoint"))
	if n.Port != 0 {
		for _, msg := range utilvalidation.IsValidPortNum(int(n.Port)) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("port"), n.Port, msg))
		}
	}
	allErrs = append(allErrs, requireString(n.ClusterUUID, fldPath.Child("clusterUUID"))...)
	allErrs = append(allErrs, requireString(n.SubnetUUID, fldPath.Child("subnetUUID"))...)
	return allErrs
}

func validateProxmox(p *butler.ProxmoxConfig, fldPath *field.Path) field.ErrorList {
	allErrs := validateURL(p.Endpoint, httpSchemes, fldPath.Child("endpoint"))
	nodesPath := fldPath.Child("nodes")
	if len(p.Nodes) == 0 {
		allErrs = append(allErrs, field.Required(nodesPath, "at least one Proxmox node is required"))
	}
	allErrs = append(allErrs, validateNonEmptyStrings(p.Nodes, nodesPath)...)
	allErrs = append(allErrs, validateUniqueStrings(p.Nodes, nodesPath)...)
	allErrs = append(allErrs, requireString(p.Storage, fldPath.Child("storage"))...)
	if p.TemplateID != 0 && (p.TemplateID < proxmoxMinVMID || p.TemplateID > proxmoxMaxVMID) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("templateID"), p.TemplateID, fmt.Sprintf("must be a Proxmox VM id between %d and %d", proxmoxMinVMID, proxmoxMaxVMID)))
	}
	if r := p.VMIDRange; r != nil {
		rangePath := fldPath.Child("vmidRange")
		allErrs = append(allErrs, validateMinimum(r.Start, proxmoxMinVMID, rangePath.Child("start"))...)
		switch {
		case r.End < r.Start:
			allErrs = append(allErrs, field.Invalid(rangePath.Child("end"), r.End, fmt.Sprintf("must be greater than or equal to start (%d)", r.Start)))
		case r.End > proxmoxMaxVMID:
			allErrs = append(allErrs, field.Invalid(rangePath.Child("end"), r.End, fmt.Sprintf("must be less than or equal to %d", proxmoxMaxVMID)))
		}
	}
	return allErrs
}

func validateAWS(a *butler.AWSConfig, fldPath *field.Path) field.ErrorList {
	allErrs := requireString(a.Region, fldPath.Child("region"))
	allErrs = append(allErrs, validateNonEmptyStrings(a.SubnetIDs, fldPath.Child("subnetIDs"))...)
	allErrs = append(allErrs, validateNonEmptyStrings(a.SecurityGroupIDs, fldPath.Child("securityGroupIDs"))...)
	return allErrs
}

func validateAzure(a *butler.AzureConfig, fldPath *field.Path) field.ErrorList {
	allErrs := requireString(a.SubscriptionID, fldPath.Child("subscriptionID"))
	allErrs = append(allErrs, requireString(a.ResourceGroup, fldPath.Child("resourceGroup"))...)
	return allErrs
}

func validateGCP(g *butler.GCPConfig, fldPath *field.Path) field.ErrorList {
	allErrs := requireString(g.ProjectID, fldPath.Child("projectID"))
	allErrs = append(allErrs, requireString(g.Region, fldPath.Child("region"))...)
	return allErrs
}

func validateProviderNetwork(n *butler.ProviderNetwork, fldPath *field.Path) field.ErrorList {
	allErrs := validateOptionalEnum(n.Mode, networkModes, fldPath.Child("mode"))

	refsPath := fldPath.Child("poolRefs")
	if n.Mode == butler.NetworkModeIPAM && len(n.PoolRefs) == 0 {
		allErrs = append(allErrs, field.Required(refsPath, "at least one NetworkPool is required when mode is ipam"))
	}
	seen := sets.New[string]()
	for i, ref := range n.PoolRefs {
		namePath := refsPath.Index(i).Child("name")
		errs := validateDNSSubdomain(ref.Name, namePath)
		if len(errs) == 0 && seen.Has(ref.Name) {
			errs = append(errs, field.Duplicate(namePath, ref.Name))
		}
		seen.Insert(ref.Name)
		allErrs = append(allErrs, errs...)
	}

	var subnet netip.Prefix
	subnetOK := false
	if n.Subnet != "" {
		var errs field.ErrorList
		subnet, errs = parsePrefix(n.Subnet, fldPath.Child("subnet"))
		allErrs = append(allErrs, errs...)
		subnetOK = len(errs) == 0
	}
	if n.Gateway != "" {
		gwPath := fldPath.Child("gateway")
		gw, errs := parseAddr(n.Gateway, gwPath)
		allErrs = append(allErrs, errs...)
		if len(errs) == 0 && subnetOK && !subnet.Contains(gw) {
			allErrs = append(allErrs, field.Invalid(gwPath, n.Gateway, fmt.Sprintf("must be inside spec.network.subnet (%s)", n.Subnet)))
		}
	}
	for i, dns := range n.DNSServers {
		_, errs := parseAddr(dns, fldPath.Child("dnsServers").Index(i))
		allErrs = append(allErrs, errs...)
	}

	if lb := n.LoadBalancer; lb != nil {
		lbPath := fldPath.Child("loadBalancer")
		allErrs = append(allErrs, validateOptionalMinimum(lb.DefaultPoolSize, 1, lbPath.Child("defaultPoolSize"))...)
		allErrs = append(allErrs, validateOptionalEnum(lb.AllocationMode, lbAllocationModes, lbPath.Child("allocationMode"))...)
		allErrs = append(allErrs, validateOptionalMinimum(lb.InitialPoolSize, 1, lbPath.Child("initialPoolSize"))...)
		allErrs = append(allErrs, validateOptionalMinimum(lb.GrowthIncrement, 1, lbPath.Child("growthIncrement"))...)
	}
	if q := n.QuotaPerTenant; q != nil {
		quotaPath := fldPath.Child("quotaPerTenant")
		allErrs = append(allErrs, validateOptionalMinimum(q.MaxNodeIPs, 1, quotaPath.Child("maxNodeIPs"))...)
		allErrs = append(allErrs, validateOptionalMinimum(q.MaxLoadBalancerIPs, 1, quotaPath.Child("maxLoadBalancerIPs"))...)
	}
	return allErrs
}
