package addons

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The least privilege of a restricted addon (Request.Restriction: a chart a Team installs from a
// repository, or a catalog chart with a Team's values): it is rendered before anything is installed,
// hooks included, and refused when it would grant more than the built-in `edit` role does —
// a binding to cluster-admin, admin or a system: role, or a role with a wildcard, escalate,
// bind or impersonate, or writes to RBAC, admission, certificates, CRDs or node proxies.
// Nothing of a refused chart reaches the tenant.

// privilegedRoles are the roles above edit a restricted chart may not bind.
var privilegedRoles = []string{"cluster-admin", "admin"}

// privilegedVerbs let a subject grant or act as more than it holds.
var privilegedVerbs = []string{"*", "escalate", "bind", "impersonate"}

// guardedGroups are API groups above edit: a restricted chart's roles may only read them.
var guardedGroups = []string{"rbac.authorization.k8s.io", "admissionregistration.k8s.io", "certificates.k8s.io", "apiextensions.k8s.io"}

// guardedResources are core resources above edit.
var guardedResources = []string{"nodes/proxy", "serviceaccounts/token"}

var readVerbs = []string{"get", "list", "watch"}

// CheckPrivilege renders ch with values (as an install would, with default capabilities and no
// cluster lookups) and returns an error naming every object that grants more than edit; who
// says who may not (Request.Restriction).
func CheckPrivilege(ch *chart.Chart, values map[string]any, release ReleaseKey, who string) error {
	opts := chartutil.ReleaseOptions{Name: release.Name, Namespace: release.Namespace, IsInstall: true, Revision: 1}
	renderValues, err := chartutil.ToRenderValues(ch, values, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return fmt.Errorf("rendering the chart: %w", err)
	}
	rendered, err := engine.Render(ch, renderValues)
	if err != nil {
		return fmt.Errorf("rendering the chart: %w", err)
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") {
			continue
		}
		p, err := manifestProblems(rendered[name])
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		problems = append(problems, p...)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("chart %s %s grants more than edit, which %s may not: %s",
		ch.Metadata.Name, ch.Metadata.Version, who, strings.Join(problems, "; "))
}

type rbacObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	RoleRef struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"roleRef"`
	Rules []struct {
		APIGroups []string `json:"apiGroups"`
		Resources []string `json:"resources"`
		Verbs     []string `json:"verbs"`
	} `json:"rules"`
	AggregationRule any `json:"aggregationRule"`
}

// manifestProblems checks every document of one rendered template.
func manifestProblems(manifest string) ([]string, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var problems []string
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return problems, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var obj rbacObject
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, err
		}
		problems = append(problems, objectProblems(&obj)...)
	}
}

func objectProblems(o *rbacObject) []string {
	what := o.Kind + " " + o.Metadata.Name
	var problems []string
	switch o.Kind {
	case "ClusterRoleBinding", "RoleBinding":
		if slices.Contains(privilegedRoles, o.RoleRef.Name) || strings.HasPrefix(o.RoleRef.Name, "system:") {
			problems = append(problems, fmt.Sprintf("%s binds %s %s", what, o.RoleRef.Kind, o.RoleRef.Name))
		}
	case "ClusterRole", "Role":
		if o.AggregationRule != nil {
			problems = append(problems, what+" aggregates other roles")
		}
		for _, r := range o.Rules {
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
				if slices.Contains(guardedResources, res) {
					problems = append(problems, fmt.Sprintf("%s grants %s", what, res))
				}
			}
		}
	}
	return problems
}
