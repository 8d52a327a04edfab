package addons

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/component/access"
)

// The least privilege of a restricted addon (Request.Restriction: a chart a Team installs from a
// repository, or a catalog chart with a Team's values) is an allow-list, checked on exactly what
// Helm sends to the tenant: the post-rendered manifests, the crds/ files and the hooks
// (privilegeGate), whatever their file names, on install and upgrade alike. Objects are decoded
// case-sensitively and strictly, as kube-apiserver decodes them, so no field the checker reads
// differently from the API server (a `roleref` beside `roleRef`) gets through.
//
// A Team's chart may create the kinds of teamKinds, in namespaces that are neither system
// namespaces nor marked protected (external.ProtectedNamespaceLabel: any workload there can run
// as any of its service accounts); its roles write only what an operator writes himself
// (access.OperatorRules: edit without impersonate) and read anything but Secrets, node proxies
// and tokens; its bindings bind only roles the chart itself defines (or view), cluster-wide only
// read-only ones; its Services take no address of their own (externalIPs, loadBalancerIP, a
// pinned ClusterIP) and are not default/kubernetes.
// Everything else is refused, before Helm writes anything, naming each object.

// teamKinds are what a Team's chart may create: the namespaced objects of an application —
// workloads, their configuration, Services and Ingresses, storage claims, autoscaling and
// disruption budgets, network policies — which the built-in edit role writes too, and RBAC,
// checked rule by rule. Left out on purpose: cluster-scoped kinds other than RBAC (Namespaces,
// CRDs, PersistentVolumes, StorageClasses, PriorityClasses, webhooks: they change the cluster
// for everyone), Endpoints and EndpointSlices (a Service pointed at any address), quotas and
// limits (the tenant admin's), and custom resources (what a controller does with them is
// unknown here). A platform that wants more for one chart sets trustTeamValues on its definition.
var teamKinds = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}: true, {Kind: "Secret"}: true, {Kind: "Service"}: true,
	{Kind: "ServiceAccount"}: true, {Kind: "Pod"}: true, {Kind: "PersistentVolumeClaim"}: true,
	{Group: "apps", Kind: "Deployment"}: true, {Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}: true, {Group: "apps", Kind: "ReplicaSet"}: true,
	{Group: "batch", Kind: "Job"}: true, {Group: "batch", Kind: "CronJob"}: true,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:          true,
	{Group: "networking.k8s.io", Kind: "Ingress"}:           true, {Group: "networking.k8s.io", Kind: "NetworkPolicy"}: true,
	{Group: rbacv1.GroupName, Kind: "Role"}: true, {Group: rbacv1.GroupName, Kind: "RoleBinding"}: true,
	{Group: rbacv1.GroupName, Kind: "ClusterRole"}: true, {Group: rbacv1.GroupName, Kind: "ClusterRoleBinding"}: true,
}

// clusterScoped are the kinds of teamKinds without a namespace.
var clusterScoped = []string{"ClusterRole", "ClusterRoleBinding"}

// builtinRoles are names a chart's own role may not take: binding "its" edit would bind the
// cluster's. view is the one built-in role a chart may bind.
var builtinRoles = []string{"cluster-admin", "admin", "edit", "view"}

// privilegedVerbs let a subject grant or act as more than it holds.
var privilegedVerbs = []string{"*", "escalate", "bind", "impersonate"}

// guardedGroups are API groups above edit: a restricted chart's roles may only read them.
var guardedGroups = []string{"rbac.authorization.k8s.io", "admissionregistration.k8s.io", "certificates.k8s.io", "apiextensions.k8s.io"}

// guardedResources are resources a chart's role may not name at all: Secrets (whoever reads a
// namespace's Secrets holds its service accounts' tokens), node proxies and token requests.
var guardedResources = []string{"secrets", "nodes/proxy", "serviceaccounts/token"}

// remoteResources reach into pods and nodes (exec, attach, port-forward, proxy) even with get
// alone (a websocket upgrade is a GET): a chart's role granting them is not bound cluster-wide,
// where it would reach kube-system's pods.
var remoteResources = []string{"pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "services/proxy", "nodes/proxy"}

var readVerbs = []string{"get", "list", "watch"}

// privilegeCheck is the allow-list of one restricted action. It keeps the roles the chart
// defined and that passed, so a binding later in the stream (or in a hook) may bind them.
type privilegeCheck struct {
	// namespace is the release's: where a namespaced object without one goes.
	namespace string
	// protected says whether a tenant namespace is marked protected (external.ProtectedNamespaceLabel).
	protected func(namespace string) (bool, error)
	// roles are the chart's roles that passed, by roleKey, with why they may not be bound
	// cluster-wide ("" when they may).
	roles map[string]string
}

func newPrivilegeCheck(namespace string, protected func(string) (bool, error)) *privilegeCheck {
	return &privilegeCheck{namespace: namespace, protected: protected, roles: map[string]string{}}
}

// object is what the check reads of every object, decoded case-sensitively.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	raw []byte
	// invalid is why the object cannot be read as the API server reads it.
	invalid error
}

func (o *object) String() string {
	if o.Metadata.Namespace == "" {
		return o.Kind + " " + o.Metadata.Name
	}
	return o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
}

// manifest checks a stream of YAML documents and returns a problem per refused object.
func (c *privilegeCheck) manifest(stream []byte) ([]string, error) {
	objs, err := decodeObjects(stream)
	if err != nil {
		return nil, err
	}
	return c.objects(objs), nil
}

// objects checks decoded objects: roles first, so a binding may come before its role.
func (c *privilegeCheck) objects(objs []*object) []string {
	var problems []string
	isRole := func(o *object) bool { return o.Kind == "Role" || o.Kind == "ClusterRole" }
	for _, pass := range []bool{true, false} {
		for _, o := range objs {
			if isRole(o) == pass {
				problems = append(problems, c.object(o)...)
			}
		}
	}
	return problems
}

func (c *privilegeCheck) object(o *object) []string {
	if o.invalid != nil {
		return []string{fmt.Sprintf("%s: %v", o, o.invalid)}
	}
	if p := c.placement(o); p != "" {
		return []string{p}
	}
	switch o.Kind {
	case "Role", "ClusterRole":
		return c.role(o)
	case "RoleBinding", "ClusterRoleBinding":
		return c.binding(o)
	case "Service":
		return serviceProblems(o)
	}
	return nil
}

// serviceProblems refuses the Services through which a chart's Pods take other Pods' traffic:
// spec.externalIPs (kube-proxy sends every Pod's traffic to those addresses to the Service, other
// namespaces' too: CVE-2020-8554), spec.loadBalancerIP (a load-balancer controller announces it
// and writes it to the status kube-proxy reads: the same capture) and the load balancers'
// annotations asking for addresses (external.LoadBalancerAddressAnnotations), a pinned ClusterIP (the API's, once default/kubernetes is
// gone, takes every Pod's API traffic) and default/kubernetes itself (its selector would publish
// the chart's Pods beside the API). The chart is installed as the tenant's admin, whom the
// tenant's policy butler-api-endpoint exempts, so this is the only check.
func serviceProblems(o *object) []string {
	var svc struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			ExternalIPs    []string `json:"externalIPs"`
			LoadBalancerIP string   `json:"loadBalancerIP"`
			ClusterIP      string   `json:"clusterIP"`
			ClusterIPs     []string `json:"clusterIPs"`
		} `json:"spec"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(o.raw, &svc); err != nil {
		return []string{fmt.Sprintf("%s: %v", o, err)}
	}
	var problems []string
	if o.Metadata.Namespace == "default" && o.Metadata.Name == "kubernetes" {
		problems = append(problems, fmt.Sprintf("%s is the tenant's API Service, written only by its kube-apiserver", o))
	}
	if len(svc.Spec.ExternalIPs) > 0 {
		problems = append(problems, fmt.Sprintf("%s sets spec.externalIPs (%s): it would take other namespaces' traffic to them", o, strings.Join(svc.Spec.ExternalIPs, ", ")))
	}
	if svc.Spec.LoadBalancerIP != "" {
		problems = append(problems, fmt.Sprintf("%s sets spec.loadBalancerIP (%s): a load balancer would announce it and take other namespaces' traffic to it", o, svc.Spec.LoadBalancerIP))
	}
	for _, key := range external.LoadBalancerAddressAnnotations {
		if v, ok := svc.Metadata.Annotations[key]; ok {
			problems = append(problems, fmt.Sprintf("%s sets annotation %s (%s): a load balancer would announce it and take other namespaces' traffic to it", o, key, v))
		}
	}
	// Any pinned address, not only the API's: a chart needs none, and no CIDR or parser here can
	// miss a spelling the kube-apiserver reads as the API's (or another Service's) ClusterIP.
	for _, ip := range slices.Compact(append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...)) {
		if ip != "" && ip != corev1.ClusterIPNone {
			problems = append(problems, fmt.Sprintf("%s pins its ClusterIP (%s): a Team's chart leaves it to the kube-apiserver (\"\" or \"None\")", o, ip))
		}
	}
	return problems
}

// placement refuses an object of a kind a Team's chart may not create or in a namespace it may
// not write (defaulting the namespace to the release's): what a delete is checked for too.
func (c *privilegeCheck) placement(o *object) string {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return fmt.Sprintf("%s: %v", o, err)
	}
	if !teamKinds[gv.WithKind(o.Kind).GroupKind()] {
		return fmt.Sprintf("%s (%s) is not a kind a Team's chart may create", o, o.APIVersion)
	}
	if slices.Contains(clusterScoped, o.Kind) {
		o.Metadata.Namespace = ""
		return ""
	}
	if o.Metadata.Namespace == "" {
		o.Metadata.Namespace = c.namespace
	}
	return c.namespaceProblem(o)
}

// namespaceProblem refuses objects in system and protected namespaces: a workload there runs
// as any of the namespace's service accounts, a binding there grants in it.
func (c *privilegeCheck) namespaceProblem(o *object) string {
	ns := o.Metadata.Namespace
	if slices.Contains(external.TenantSystemNamespaces, ns) {
		return fmt.Sprintf("%s is in %s, a system namespace", o, ns)
	}
	if c.protected == nil {
		return ""
	}
	protected, err := c.protected(ns)
	if err != nil {
		return fmt.Sprintf("%s: whether namespace %s is protected is unknown: %v", o, ns, err)
	}
	if protected {
		return fmt.Sprintf("%s is in %s, a protected namespace (%s=true)", o, ns, external.ProtectedNamespaceLabel)
	}
	return ""
}

func (c *privilegeCheck) role(o *object) []string {
	var r rbacv1.ClusterRole // a Role is a ClusterRole without aggregationRule
	if p := strictDecode(o, &r); p != "" {
		return []string{p}
	}
	var problems []string
	if slices.Contains(builtinRoles, r.Name) || strings.HasPrefix(r.Name, "system:") {
		problems = append(problems, fmt.Sprintf("%s takes the name of a built-in role", o))
	}
	if r.AggregationRule != nil {
		problems = append(problems, o.String()+" aggregates other roles")
	}
	problems = append(problems, aggregationLabels(o)...)
	clusterWide := ""
	for _, rule := range r.Rules {
		problems = append(problems, ruleProblems(o.String(), rule)...)
		if clusterWide == "" {
			clusterWide = clusterWideProblem(rule)
		}
	}
	if len(problems) == 0 {
		c.roles[roleKey(o.Kind, o.Metadata.Namespace, o.Metadata.Name)] = clusterWide
	}
	return problems
}

// aggregationLabels refuses a role labelled aggregate-to-* (the built-in view, edit and admin,
// butler:operator): the clusterrole-aggregation-controller merges its rules into roles that
// viewers and operators hold cluster-wide.
func aggregationLabels(o *object) []string {
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(o.Metadata.Labels)) {
		_, name, _ := strings.Cut(k, "/")
		if strings.HasPrefix(name, "aggregate-to-") || strings.HasPrefix(k, "aggregate-to-") {
			problems = append(problems, fmt.Sprintf("%s aggregates into other roles (label %s)", o, k))
		}
	}
	return problems
}

// clusterWideProblem says why a rule that passed may not be bound cluster-wide: it writes, or
// it reaches into pods or nodes.
func clusterWideProblem(r rbacv1.PolicyRule) string {
	if slices.ContainsFunc(r.Verbs, func(v string) bool { return !slices.Contains(readVerbs, v) }) {
		return "it writes"
	}
	for _, res := range r.Resources {
		for _, remote := range remoteResources {
			if matchesResource(res, remote) {
				return "it grants " + remote
			}
		}
	}
	return ""
}

// matchesResource says whether a rule's resource grants resource as RBAC matches it: by name,
// or as "*/sub" for any resource's subresource sub.
func matchesResource(ruleResource, resource string) bool {
	if ruleResource == resource {
		return true
	}
	_, sub, ok := strings.Cut(resource, "/")
	return ok && ruleResource == "*/"+sub
}

func ruleProblems(what string, r rbacv1.PolicyRule) []string {
	var problems []string
	for _, v := range r.Verbs {
		if slices.Contains(privilegedVerbs, v) {
			problems = append(problems, fmt.Sprintf("%s grants %q", what, v))
		}
	}
	if slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
		problems = append(problems, what+" grants every resource (\"*\")")
	}
	writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return !slices.Contains(readVerbs, v) })
	for _, g := range r.APIGroups {
		if writes && slices.Contains(guardedGroups, g) {
			problems = append(problems, fmt.Sprintf("%s writes %s", what, g))
		}
	}
	for _, res := range r.Resources {
		for _, guarded := range guardedResources {
			switch {
			case res == guarded:
				problems = append(problems, fmt.Sprintf("%s grants %s", what, res))
			case matchesResource(res, guarded):
				problems = append(problems, fmt.Sprintf("%s grants %s (as %q)", what, guarded, res))
			}
		}
	}
	if writes && len(r.NonResourceURLs) > 0 {
		problems = append(problems, what+" writes non-resource URLs")
	}
	return append(problems, beyondOperator(what, r)...)
}

// beyondOperator refuses the writes (every verb but get, list and watch) of a rule that the
// operator's own rules (access.OperatorRules, edit without impersonate) do not cover, as RBAC's
// escalation check compares them: the chart is installed as the tenant's admin, so RBAC's own
// check passes, and an operator mints the token of a ServiceAccount the chart binds the role to.
// Reads are free but for guardedResources. What the checks above name is left to them.
func beyondOperator(what string, r rbacv1.PolicyRule) []string {
	writes := rbacv1.PolicyRule{ResourceNames: r.ResourceNames}
	for _, v := range r.Verbs {
		if !slices.Contains(readVerbs, v) && !slices.Contains(privilegedVerbs, v) {
			writes.Verbs = append(writes.Verbs, v)
		}
	}
	writes.APIGroups = slices.DeleteFunc(slices.Clone(r.APIGroups), func(g string) bool { return g == "*" || slices.Contains(guardedGroups, g) })
	writes.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(res string) bool {
		return res == "*" || slices.ContainsFunc(guardedResources, func(g string) bool { return matchesResource(res, g) })
	})
	_, uncovered := rbacvalidation.Covers(access.OperatorRules(), []rbacv1.PolicyRule{writes})
	var keys []string
	verbs := map[string][]string{}
	for _, u := range uncovered { // one group, resource and verb each (and resource name)
		key := u.Resources[0]
		if g := u.APIGroups[0]; g != "" {
			key += "." + g
		}
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
		if !slices.Contains(verbs[key], u.Verbs[0]) {
			verbs[key] = append(verbs[key], u.Verbs[0])
		}
	}
	var problems []string
	for _, k := range keys {
		problems = append(problems, fmt.Sprintf("%s grants %s of %s, beyond what an operator may do himself (edit without impersonate)", what, strings.Join(verbs[k], ", "), k))
	}
	return problems
}

// binding allows a binding of a role the chart defined and that passed, or of view; a
// ClusterRoleBinding grants everywhere, kube-system included, so only a read-only role that
// reaches into no pod or node.
func (c *privilegeCheck) binding(o *object) []string {
	var b rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
	if p := strictDecode(o, &b); p != "" {
		return []string{p}
	}
	ref := b.RoleRef
	bound := fmt.Sprintf("%s binds %s %s", o, ref.Kind, ref.Name)
	if ref.Kind == "ClusterRole" && ref.Name == "view" {
		return nil
	}
	ns := o.Metadata.Namespace
	if ref.Kind == "ClusterRole" {
		ns = ""
	}
	clusterWide, defined := c.roles[roleKey(ref.Kind, ns, ref.Name)]
	switch {
	case ref.APIGroup != rbacv1.GroupName || (ref.Kind != "Role" && ref.Kind != "ClusterRole"):
		return []string{bound + ", which is not an RBAC role"}
	case !defined:
		return []string{bound + ", which the chart does not define: a Team's chart binds only its own roles and view"}
	case o.Kind == "ClusterRoleBinding" && clusterWide != "":
		return []string{bound + " in every namespace, and " + clusterWide + ": a Team's chart binds cluster-wide only read-only roles without exec, attach, port-forward or proxy"}
	}
	return nil
}

func roleKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// strictDecode decodes o into v as kube-apiserver would and refuses what it would read
// otherwise than encoding/json: unknown fields, duplicate fields and fields that differ only in
// case (sigs.k8s.io/json).
func strictDecode(o *object, v any) string {
	strict, err := kjson.UnmarshalStrict(o.raw, v)
	if err != nil {
		return fmt.Sprintf("%s: %v", o, err)
	}
	if len(strict) > 0 {
		return fmt.Sprintf("%s: %v", o, errors.Join(strict...))
	}
	return ""
}

// decodeObjects splits a YAML stream into objects (a List's items each), refusing duplicate
// keys and keys kube-apiserver would not read as the checker does.
func decodeObjects(stream []byte) ([]*object, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var objs []*object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" {
			continue
		}
		more, err := decodeJSON(data)
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
}

// listKinds are the lists whose items are checked one by one: v1 List (what kubectl and Helm
// send for a List) and RBAC's. Any other kind ending in List is checked as an object, and so
// refused: taking it for a list, an empty one passed unchecked.
var listKinds = map[schema.GroupKind]bool{
	{Kind: "List"}: true, {Group: rbacv1.GroupName, Kind: "RoleList"}: true, {Group: rbacv1.GroupName, Kind: "ClusterRoleList"}: true,
	{Group: rbacv1.GroupName, Kind: "RoleBindingList"}: true, {Group: rbacv1.GroupName, Kind: "ClusterRoleBindingList"}: true,
}

// decodeJSON decodes one object (or the items of a List, which kubectl's builder expands).
func decodeJSON(data []byte) ([]*object, error) {
	var fields map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &fields); err != nil {
		return nil, err
	}
	o := &object{raw: data}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, o); err != nil {
		return nil, err
	}
	if o.invalid = caseVariants(fields, ""); o.invalid != nil {
		return []*object{o}, nil
	}
	if !listKinds[schema.FromAPIVersionAndKind(o.APIVersion, o.Kind).GroupKind()] {
		return []*object{o}, nil
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &list); err != nil {
		return nil, err
	}
	var objs []*object
	for _, item := range list.Items {
		more, err := decodeJSON(item)
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	return objs, nil
}

// userKeyed are the fields whose keys are the user's, not the schema's (string maps the API
// server keeps case-sensitively: HTTP_PROXY and http_proxy are two keys), so not checked.
var userKeyed = map[string]bool{"data": true, "stringData": true, "binaryData": true, "labels": true, "annotations": true,
	"matchLabels": true, "nodeSelector": true}

// caseVariants refuses a mapping, at any depth, with two keys equal but for case: the API
// server reads one of them, a case-insensitive reader may read the other. The contents of
// userKeyed maps are left alone.
func caseVariants(v any, path string) error {
	switch v := v.(type) {
	case map[string]any:
		seen := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			child := v[k]
			if other, ok := seen[strings.ToLower(k)]; ok {
				return fmt.Errorf("%s has both %q and %q", orRoot(path), other, k)
			}
			seen[strings.ToLower(k)] = k
			if userKeyed[k] {
				continue
			}
			if err := caseVariants(child, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		for i, child := range v {
			if err := caseVariants(child, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func orRoot(path string) string {
	if path == "" {
		return "the object"
	}
	return strings.TrimPrefix(path, ".")
}
