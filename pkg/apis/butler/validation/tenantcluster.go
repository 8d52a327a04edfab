package validation

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/hibernation"
)

var (
	controlPlaneTypes = sets.New(butler.ControlPlaneHosted, butler.ControlPlaneStandalone)
	osTypes           = sets.New(butler.OSTalos, butler.OSRocky, butler.OSFlatcar, butler.OSBottlerocket, butler.OSKairos)
	// unprovenOSTypes are accepted with a warning until they are proven end to end.
	unprovenOSTypes     = sets.New(butler.OSBottlerocket, butler.OSKairos)
	tenantClusterPhases = sets.New(
		butler.TenantClusterPending, butler.TenantClusterProvisioning, butler.TenantClusterInstalling,
		butler.TenantClusterReady, butler.TenantClusterUpdating, butler.TenantClusterDeleting, butler.TenantClusterFailed,
		butler.TenantClusterHibernated,
	)

	cniProviders          = sets.New("cilium")
	loadBalancerProviders = sets.New("metallb")
	storageProviders      = sets.New("longhorn", "linstor")
	ingressProviders      = sets.New("traefik", "nginx")
	gitopsProviders       = sets.New("fluxcd", "argocd")

	// rockyMaxVersion is the newest Kubernetes release Rocky images are built for.
	rockyMaxVersion = kubeVersion{major: 1, minor: 30, patch: 2}
)

// ValidateTenantCluster validates a TenantCluster on create.
func ValidateTenantCluster(obj *butler.TenantCluster) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateTenantClusterSpec(&obj.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateSnapshotPolicy(obj.Name, obj.Spec.Snapshots, field.NewPath("spec", "snapshots"))...)
	allErrs = append(allErrs, validateOperation(obj.Annotations, nil)...)
	return allErrs
}

// validateOperation checks the operation annotation: a known operation, and a rotation
// completed only once it is prepared (status says so; nil on create, when there is none).
func validateOperation(annotations map[string]string, status *butler.TenantClusterStatus) field.ErrorList {
	op, ok := annotations[butler.OperationAnnotation]
	if !ok {
		return nil
	}
	fldPath := field.NewPath("metadata", "annotations").Key(butler.OperationAnnotation)
	switch op {
	case butler.OperationRotateCredentialsStart:
		if r := rotationOf(status); r != nil && r.Phase != butler.RotationCompleted {
			return field.ErrorList{field.Invalid(fldPath, op, fmt.Sprintf("a rotation is %s: complete it first", r.Phase))}
		}
	case butler.OperationRotateCredentialsComplete:
		if r := rotationOf(status); r == nil || r.Phase != butler.RotationPrepared {
			phase := "not started"
			if r != nil {
				phase = string(r.Phase)
			}
			return field.ErrorList{field.Invalid(fldPath, op, fmt.Sprintf("the rotation is %s; it can be completed once Prepared", phase))}
		}
	default:
		return field.ErrorList{field.NotSupported(fldPath, op, []string{butler.OperationRotateCredentialsStart, butler.OperationRotateCredentialsComplete})}
	}
	return nil
}

func rotationOf(status *butler.TenantClusterStatus) *butler.CredentialsRotation {
	if status == nil || status.Credentials == nil {
		return nil
	}
	return status.Credentials.Rotation
}

// ValidateTenantClusterUpdate validates a TenantCluster on update: the spec rules, the fields
// fixed at creation, and the upgrade path of kubernetesVersion.
func ValidateTenantClusterUpdate(obj, old *butler.TenantCluster) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, ratchetGitRepository(validateTenantClusterSpec(&obj.Spec, specPath), &obj.Spec, &old.Spec)...)
	allErrs = append(allErrs, validateSnapshotPolicy(obj.Name, obj.Spec.Snapshots, specPath.Child("snapshots"))...)

	spec, oldSpec := &obj.Spec, &old.Spec
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(spec.ControlPlane.Type, oldSpec.ControlPlane.Type, specPath.Child("controlPlane", "type"))...)
	netPath := specPath.Child("networking")
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(spec.Networking.PodCIDR, oldSpec.Networking.PodCIDR, netPath.Child("podCIDR"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(spec.Networking.ServiceCIDR, oldSpec.Networking.ServiceCIDR, netPath.Child("serviceCIDR"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(spec.Workers.MachineTemplate.OS.Type, oldSpec.Workers.MachineTemplate.OS.Type, specPath.Child("workers", "machineTemplate", "os", "type"))...)
	allErrs = append(allErrs, validateVersionChange(spec.KubernetesVersion, oldSpec.KubernetesVersion, specPath.Child("kubernetesVersion"))...)
	allErrs = append(allErrs, validateRestoreChange(obj, old, specPath.Child("restoreFrom"))...)
	if obj.Annotations[butler.OperationAnnotation] != old.Annotations[butler.OperationAnnotation] {
		allErrs = append(allErrs, validateOperation(obj.Annotations, &old.Status)...)
	}
	return allErrs
}

// validateVersionChange allows patch upgrades and upgrades to the next minor only, which is
// the version skew Kubernetes itself supports for a control plane upgrade.
func validateVersionChange(newVersion, oldVersion string, fldPath *field.Path) field.ErrorList {
	if newVersion == oldVersion {
		return nil
	}
	n, newOK := parseKubeVersion(newVersion)
	o, oldOK := parseKubeVersion(oldVersion)
	if !newOK || !oldOK {
		// A malformed new version is reported by the spec rules; a malformed stored one
		// cannot be reasoned about, so any well-formed new version replaces it.
		return nil
	}
	switch {
	case n.compare(o) < 0:
		return field.ErrorList{field.Invalid(fldPath, newVersion, fmt.Sprintf("may not be downgraded from %s to %s", oldVersion, newVersion))}
	case n.major != o.major:
		return field.ErrorList{field.Invalid(fldPath, newVersion, fmt.Sprintf("may not change major version (from %s to %s)", oldVersion, newVersion))}
	case n.minor > o.minor+1:
		return field.ErrorList{field.Invalid(fldPath, newVersion, fmt.Sprintf("may only be upgraded one minor version at a time: from %s the next allowed minor is v%d.%d, not %s", oldVersion, o.major, o.minor+1, newVersion))}
	}
	return nil
}

// ValidateTenantClusterStatusUpdate validates a write to TenantCluster's status subresource.
func ValidateTenantClusterStatusUpdate(obj, old *butler.TenantCluster) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	status := &obj.Status
	statusPath := field.NewPath("status")
	allErrs = append(allErrs, validateOptionalEnum(status.Phase, tenantClusterPhases, statusPath.Child("phase"))...)
	allErrs = append(allErrs, validateMinimum(status.ObservedGeneration, 0, statusPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, validateOptionalDNSLabel(status.TenantNamespace, statusPath.Child("tenantNamespace"))...)
	allErrs = append(allErrs, validateLocalRef(status.KubeconfigSecretRef, utilvalidation.IsDNS1123Subdomain, statusPath.Child("kubeconfigSecretRef"))...)
	for i := range status.IPAllocationRefs {
		allErrs = append(allErrs, validateLocalRef(&status.IPAllocationRefs[i], utilvalidation.IsDNS1123Subdomain, statusPath.Child("ipAllocationRefs").Index(i))...)
	}
	if state := status.ObservedState; state != nil {
		workersPath := statusPath.Child("observedState", "workers")
		allErrs = append(allErrs, validateMinimum(state.Workers.Desired, 0, workersPath.Child("desired"))...)
		allErrs = append(allErrs, validateMinimum(state.Workers.Ready, 0, workersPath.Child("ready"))...)
	}
	allErrs = append(allErrs, validateRestoreStatus(status.Restore, statusPath.Child("restore"))...)
	allErrs = append(allErrs, validateCredentialsStatus(status.Credentials, statusPath.Child("credentials"))...)
	return allErrs
}

func validateCredentialsStatus(c *butler.TenantCredentialsStatus, fldPath *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, e := range c.Expiry {
		p := fldPath.Child("expiry").Index(i).Child("name")
		switch {
		case e.Name == "":
			allErrs = append(allErrs, field.Required(p, ""))
		case names.Has(e.Name):
			allErrs = append(allErrs, field.Duplicate(p, e.Name))
		}
		names.Insert(e.Name)
	}
	if r := c.Rotation; r != nil {
		phases := []butler.CredentialsRotationPhase{butler.RotationPreparing, butler.RotationPrepared, butler.RotationCompleting, butler.RotationCompleted}
		if !slices.Contains(phases, r.Phase) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("rotation", "phase"), r.Phase, phases))
		}
	}
	return allErrs
}

// TenantClusterWarnings returns the warnings for an accepted TenantCluster (create or update).
func TenantClusterWarnings(obj *butler.TenantCluster) []string {
	var warnings []string
	if osType := obj.Spec.Workers.MachineTemplate.OS.Type; unprovenOSTypes.Has(osType) {
		warnings = append(warnings, fmt.Sprintf("spec.workers.machineTemplate.os.type: %s workers are accepted but not yet proven end to end", osType))
	}
	if mt := obj.Spec.ControlPlane.MachineTemplate; mt != nil && unprovenOSTypes.Has(mt.OS.Type) {
		warnings = append(warnings, fmt.Sprintf("spec.controlPlane.machineTemplate.os.type: %s control plane machines are accepted but not yet proven end to end", mt.OS.Type))
	}
	return warnings
}

func validateTenantClusterSpec(spec *butler.TenantClusterSpec, fldPath *field.Path) field.ErrorList {
	versionPath := fldPath.Child("kubernetesVersion")
	version, allErrs := validateKubeVersion(spec.KubernetesVersion, versionPath)
	versionOK := len(allErrs) == 0

	allErrs = append(allErrs, validateLocalRef(spec.TeamRef, utilvalidation.IsDNS1123Label, fldPath.Child("teamRef"))...)
	allErrs = append(allErrs, validateNamespacedRef(spec.ProviderConfigRef, utilvalidation.IsDNS1123Subdomain, fldPath.Child("providerConfigRef"))...)
	allErrs = append(allErrs, validateControlPlane(&spec.ControlPlane, fldPath.Child("controlPlane"))...)

	workersPath := fldPath.Child("workers")
	allErrs = append(allErrs, validateMinimum(spec.Workers.Replicas, 0, workersPath.Child("replicas"))...)
	allErrs = append(allErrs, validateMachineTemplate(&spec.Workers.MachineTemplate, workersPath.Child("machineTemplate"))...)
	allErrs = append(allErrs, validateAutoRepair(spec.Workers.AutoRepair, workersPath.Child("autoRepair"))...)

	// Rocky images stop at v1.30.2. The version is what the user would change, so the error
	// goes there rather than on os.type (which is immutable after create).
	if versionOK && version.compare(rockyMaxVersion) > 0 {
		if spec.Workers.MachineTemplate.OS.Type == butler.OSRocky {
			allErrs = append(allErrs, field.Invalid(versionPath, spec.KubernetesVersion,
				"Rocky workers support Kubernetes up to "+rockyMaxVersion.String()))
		}
		if mt := spec.ControlPlane.MachineTemplate; mt != nil && mt.OS.Type == butler.OSRocky {
			allErrs = append(allErrs, field.Invalid(versionPath, spec.KubernetesVersion,
				"Rocky control plane machines support Kubernetes up to "+rockyMaxVersion.String()))
		}
	}

	allErrs = append(allErrs, validateNetworking(&spec.Networking, fldPath.Child("networking"))...)
	allErrs = append(allErrs, validateAddons(&spec.Addons, fldPath.Child("addons"))...)
	allErrs = append(allErrs, validateHibernation(spec.Hibernation, fldPath.Child("hibernation"))...)
	allErrs = append(allErrs, validateRestoreFrom(spec.RestoreFrom, fldPath.Child("restoreFrom"))...)
	allErrs = append(allErrs, validateMaintenance(spec.Maintenance, fldPath.Child("maintenance"))...)
	return allErrs
}

// minIdleTimeout keeps a cluster from being put to sleep between one kubectl call and the next.
const minIdleTimeout = 10 * time.Second

// maxIdleTimeout bounds how long a cluster woken on request stays awake unused: it holds one of
// the provider's awake-by-request slots meanwhile, which a longer wait would keep for good.
const maxIdleTimeout = 24 * time.Hour

func validateHibernation(h *butler.HibernationSpec, fldPath *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	var allErrs field.ErrorList
	for i, s := range h.Schedules {
		p := fldPath.Child("schedules").Index(i)
		if s.Start == "" && s.End == "" {
			allErrs = append(allErrs, field.Required(p, "a schedule needs start, end or both"))
		}
		for _, c := range []struct{ expr, name string }{{s.Start, "start"}, {s.End, "end"}} {
			if c.expr == "" {
				continue
			}
			if _, err := hibernation.ParseCron(c.expr); err != nil {
				allErrs = append(allErrs, field.Invalid(p.Child(c.name), c.expr, "not a cron expression: "+err.Error()))
			}
		}
		if _, err := hibernation.ParseLocation(s.Location); err != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("location"), s.Location, "not a time zone: "+err.Error()))
		}
	}
	if h.IdleTimeout != nil {
		p := fldPath.Child("idleTimeout")
		switch {
		case !h.WakeOnRequest:
			allErrs = append(allErrs, field.Invalid(p, h.IdleTimeout.Duration.String(), "needs wakeOnRequest: only the wake-on-request listener sees whether the cluster is used"))
		case h.IdleTimeout.Duration < minIdleTimeout:
			allErrs = append(allErrs, field.Invalid(p, h.IdleTimeout.Duration.String(), "must be at least "+minIdleTimeout.String()))
		case h.IdleTimeout.Duration > maxIdleTimeout:
			allErrs = append(allErrs, field.Invalid(p, h.IdleTimeout.Duration.String(), "must be at most "+maxIdleTimeout.String()+" (a cluster woken on request holds a slot of the wake listener's bound while awake)"))
		}
	}
	return allErrs
}

func validateControlPlane(cp *butler.ControlPlaneSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateOptionalEnum(cp.Type, controlPlaneTypes, fldPath.Child("type"))
	// Type-dependent rules only apply to a known type; an unknown one is reported above.
	standalone := cp.Type == butler.ControlPlaneStandalone
	hosted := cp.Type == "" || cp.Type == butler.ControlPlaneHosted
	if cp.Replicas != nil {
		replicasPath := fldPath.Child("replicas")
		r := *cp.Replicas
		switch {
		case standalone && r != 1 && r != 3 && r != 5:
			// etcd needs an odd member count to keep quorum.
			allErrs = append(allErrs, field.Invalid(replicasPath, r, "must be 1, 3 or 5 for a standalone control plane"))
		case hosted && (r < 0 || r > 3):
			// 0 is the control plane switch: stopped, its data and endpoint kept.
			allErrs = append(allErrs, field.Invalid(replicasPath, r, "must be between 0 (stopped) and 3 for a hosted control plane"))
		}
	}
	allErrs = append(allErrs, validateOptionalEnum(cp.ServiceType, exposureModes, fldPath.Child("serviceType"))...)
	allErrs = append(allErrs, validateLocalRef(cp.DataStoreRef, utilvalidation.IsDNS1123Subdomain, fldPath.Child("dataStoreRef"))...)
	allErrs = append(allErrs, validateNonEmptyStrings(cp.CertSANs, fldPath.Child("certSANs"))...)
	if res := cp.Resources; res != nil {
		resPath := fldPath.Child("resources")
		allErrs = append(allErrs, validateResourceRequirements(res.APIServer, resPath.Child("apiServer"))...)
		allErrs = append(allErrs, validateResourceRequirements(res.ControllerManager, resPath.Child("controllerManager"))...)
		allErrs = append(allErrs, validateResourceRequirements(res.Scheduler, resPath.Child("scheduler"))...)
	}
	if cp.MachineTemplate != nil {
		mtPath := fldPath.Child("machineTemplate")
		switch {
		case standalone:
			allErrs = append(allErrs, validateMachineTemplate(cp.MachineTemplate, mtPath)...)
		case hosted:
			// Hosted control planes run as pods in the management cluster: there is no machine.
			allErrs = append(allErrs, field.Forbidden(mtPath, "may only be set when type is standalone"))
		}
	}
	return allErrs
}

// validateResourceRequirements checks what a user of core ResourceRequirements expects:
// no negative amounts and no request above its limit.
func validateResourceRequirements(req *butler.ComponentResources, fldPath *field.Path) field.ErrorList {
	if req == nil {
		return nil
	}
	var allErrs field.ErrorList
	// Sorted so that the same object always yields the same error list.
	for _, name := range slices.Sorted(maps.Keys(req.Limits)) {
		q := req.Limits[name]
		allErrs = append(allErrs, validateNonNegativeQuantity(&q, fldPath.Child("limits").Key(string(name)))...)
	}
	for _, name := range slices.Sorted(maps.Keys(req.Requests)) {
		q := req.Requests[name]
		reqPath := fldPath.Child("requests").Key(string(name))
		allErrs = append(allErrs, validateNonNegativeQuantity(&q, reqPath)...)
		if limit, ok := req.Limits[name]; ok && q.Cmp(limit) > 0 {
			allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return allErrs
}

func validateMachineTemplate(mt *butler.MachineTemplate, fldPath *field.Path) field.ErrorList {
	allErrs := validateOptionalMinimum(mt.CPU, 1, fldPath.Child("cpu"))
	allErrs = append(allErrs, validatePositiveQuantity(mt.Memory, fldPath.Child("memory"))...)
	allErrs = append(allErrs, validatePositiveQuantity(mt.DiskSize, fldPath.Child("diskSize"))...)
	allErrs = append(allErrs, validateOptionalEnum(mt.OS.Type, osTypes, fldPath.Child("os", "type"))...)
	return allErrs
}

func validateNetworking(n *butler.NetworkingSpec, fldPath *field.Path) field.ErrorList {
	podPath, svcPath := fldPath.Child("podCIDR"), fldPath.Child("serviceCIDR")
	var allErrs field.ErrorList
	var prefixes []prefixAt
	if n.PodCIDR != "" {
		pod, errs := parsePrefix(n.PodCIDR, podPath)
		allErrs = append(allErrs, errs...)
		if len(errs) == 0 {
			prefixes = append(prefixes, prefixAt{pod, podPath})
		}
	}
	if n.ServiceCIDR != "" {
		svc, errs := parsePrefix(n.ServiceCIDR, svcPath)
		allErrs = append(allErrs, errs...)
		if len(errs) == 0 {
			if len(prefixes) == 1 {
				pod := prefixes[0].prefix
				switch {
				case pod.Addr().Is4() != svc.Addr().Is4():
					allErrs = append(allErrs, field.Invalid(svcPath, n.ServiceCIDR, fmt.Sprintf("must be the same IP family as spec.networking.podCIDR (%s)", family(pod.Addr()))))
				case pod.Overlaps(svc):
					allErrs = append(allErrs, field.Invalid(svcPath, n.ServiceCIDR, fmt.Sprintf("must not overlap spec.networking.podCIDR (%s)", n.PodCIDR)))
				}
			}
			prefixes = append(prefixes, prefixAt{svc, svcPath})
		}
	}

	if pool := n.LoadBalancerPool; pool != nil {
		poolPath := fldPath.Child("loadBalancerPool")
		r, ok, errs := validateAddrRange(pool.Start, pool.End, poolPath.Child("start"), poolPath.Child("end"))
		allErrs = append(allErrs, errs...)
		if ok {
			// Load balancer addresses must be routable outside the cluster, so they cannot come
			// from the cluster's own pod or service ranges.
			for _, p := range prefixes {
				if r.overlaps(prefixRange(p.prefix)) {
					allErrs = append(allErrs, field.Invalid(poolPath, r.String(), fmt.Sprintf("must not overlap %s (%s)", p.path, p.prefix)))
				}
			}
		}
	}
	if n.LBPoolSize != nil {
		sizePath := fldPath.Child("lbPoolSize")
		allErrs = append(allErrs, validateMinimum(*n.LBPoolSize, 1, sizePath)...)
		if n.LoadBalancerPool != nil {
			allErrs = append(allErrs, field.Forbidden(sizePath, "may not be set together with loadBalancerPool: give either an explicit range or a size for IPAM"))
		}
	}
	return allErrs
}

// prefixAt is a parsed CIDR and where it was written.
type prefixAt struct {
	prefix netip.Prefix
	path   *field.Path
}

func validateAddons(a *butler.AddonsSpec, fldPath *field.Path) field.ErrorList {
	// An empty provider means the platform default (see ButlerConfig defaultAddonVersions).
	var allErrs field.ErrorList
	if a.CNI != nil {
		p := fldPath.Child("cni")
		allErrs = append(allErrs, validateOptionalEnum(a.CNI.Provider, cniProviders, p.Child("provider"))...)
		allErrs = append(allErrs, validateJSONObject(a.CNI.Values, p.Child("values"))...)
	}
	if a.LoadBalancer != nil {
		p := fldPath.Child("loadBalancer")
		allErrs = append(allErrs, validateOptionalEnum(a.LoadBalancer.Provider, loadBalancerProviders, p.Child("provider"))...)
		allErrs = append(allErrs, validateJSONObject(a.LoadBalancer.Values, p.Child("values"))...)
	}
	if a.CertManager != nil {
		allErrs = append(allErrs, validateJSONObject(a.CertManager.Values, fldPath.Child("certManager", "values"))...)
	}
	if a.Storage != nil {
		p := fldPath.Child("storage")
		allErrs = append(allErrs, validateOptionalEnum(a.Storage.Provider, storageProviders, p.Child("provider"))...)
		allErrs = append(allErrs, validateJSONObject(a.Storage.Values, p.Child("values"))...)
	}
	if a.Ingress != nil {
		p := fldPath.Child("ingress")
		allErrs = append(allErrs, validateOptionalEnum(a.Ingress.Provider, ingressProviders, p.Child("provider"))...)
		allErrs = append(allErrs, validateJSONObject(a.Ingress.Values, p.Child("values"))...)
	}
	if a.Gitops != nil {
		p := fldPath.Child("gitops")
		allErrs = append(allErrs, validateOptionalEnum(a.Gitops.Provider, gitopsProviders, p.Child("provider"))...)
		if repo := a.Gitops.Repository; repo != nil {
			allErrs = append(allErrs, validateGitRepository(repo, p.Child("repository"))...)
		}
	}
	return allErrs
}

// Bounds of KubeconfigRequest spec.expirationSeconds, those of a ServiceAccount TokenRequest.
const (
	minKubeconfigExpirationSeconds = 10 * 60
	maxKubeconfigExpirationSeconds = 1 << 32
)

// ValidateKubeconfigRequest checks a request to tenantclusters/kubeconfig.
func ValidateKubeconfigRequest(req *butler.KubeconfigRequest) field.ErrorList {
	var errs field.ErrorList
	if s := req.Spec.ExpirationSeconds; s != nil {
		p := field.NewPath("spec", "expirationSeconds")
		if *s < minKubeconfigExpirationSeconds {
			errs = append(errs, field.Invalid(p, *s, fmt.Sprintf("must be at least %d (10 minutes)", minKubeconfigExpirationSeconds)))
		}
		if *s > maxKubeconfigExpirationSeconds {
			errs = append(errs, field.Invalid(p, *s, fmt.Sprintf("must be at most %d", int64(maxKubeconfigExpirationSeconds))))
		}
	}
	return errs
}
