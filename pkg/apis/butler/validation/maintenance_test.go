package validation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func window(start string, d time.Duration, days ...string) *butler.MaintenanceSpec {
	return &butler.MaintenanceSpec{Window: &butler.MaintenanceWindow{Start: start, Duration: metav1.Duration{Duration: d}, Days: days},
		AutoUpdate: &butler.MaintenanceAutoUpdate{KubernetesVersion: true}}
}

// Windows too short or too long, or that do not parse, are refused at the field that is wrong,
// on a cluster, on a Team's defaults and on ButlerConfig.
func TestMaintenanceWindowValidation(t *testing.T) {
	runCreateCases(t, validTenantCluster, ValidateTenantCluster, []createCase[butler.TenantCluster]{
		{"weekly window", func(o *butler.TenantCluster) { o.Spec.Maintenance = window("22:00", 4*time.Hour, "Saturday", "sun") }, nil},
		{"daily window", func(o *butler.TenantCluster) { o.Spec.Maintenance = window("03:00", 30*time.Minute) }, nil},
		{"too short", func(o *butler.TenantCluster) { o.Spec.Maintenance = window("03:00", 29*time.Minute) },
			[]fieldErr{invalid("spec.maintenance.window.duration")}},
		{"too long", func(o *butler.TenantCluster) { o.Spec.Maintenance = window("03:00", 6*time.Hour+time.Minute) },
			[]fieldErr{invalid("spec.maintenance.window.duration")}},
		{"bad start, day and zone", func(o *butler.TenantCluster) {
			o.Spec.Maintenance = window("25:00", time.Hour, "Caturday", "Mon", "monday")
			o.Spec.Maintenance.Window.Location = "Mars/Olympus"
		}, []fieldErr{invalid("spec.maintenance.window.start"), invalid("spec.maintenance.window.location"),
			notSupp("spec.maintenance.window.days[0]"), dup("spec.maintenance.window.days[2]")}},
	})
	config := validButlerConfig()
	config.Spec.Maintenance = window("03:00", 7*time.Hour)
	expectErrors(t, ValidateButlerConfig(config), invalid("spec.maintenance.window.duration"))
	team := validTeam()
	team.Spec.ClusterDefaults = &butler.ClusterDefaults{Maintenance: window("03:00", 10*time.Minute)}
	expectErrors(t, ValidateTeam(team), invalid("spec.clusterDefaults.maintenance.window.duration"))
}

func TestVersionCatalogValidation(t *testing.T) {
	config := validButlerConfig()
	config.Spec.KubernetesVersions = []butler.OfferedVersion{{Version: "v1.30.2"}, {Version: "v1.30"}, {Version: "v1.30.2"}}
	expectErrors(t, ValidateButlerConfig(config), invalid("spec.kubernetesVersions[1].version"),
		dup("spec.kubernetesVersions[2].version"))
}

func TestAutoRepairValidation(t *testing.T) {
	runCreateCases(t, validTenantCluster, ValidateTenantCluster, []createCase[butler.TenantCluster]{
		{"defaults", func(o *butler.TenantCluster) { o.Spec.Workers.AutoRepair = &butler.AutoRepair{Enabled: true} }, nil},
		{"everything set", func(o *butler.TenantCluster) {
			o.Spec.Workers.AutoRepair = &butler.AutoRepair{Enabled: true, MaxUnhealthy: ptr.To(intstr.FromString("50%")),
				NodeStartupTimeout:  &metav1.Duration{Duration: 15 * time.Minute},
				UnhealthyConditions: []butler.UnhealthyNodeCondition{{Type: "Ready", Status: "Unknown", Timeout: metav1.Duration{Duration: time.Minute}}}}
		}, nil},
		{"bad conditions and bounds", func(o *butler.TenantCluster) {
			o.Spec.Workers.AutoRepair = &butler.AutoRepair{Enabled: true, MaxUnhealthy: ptr.To(intstr.FromString("150%")),
				NodeStartupTimeout:  &metav1.Duration{Duration: time.Second},
				UnhealthyConditions: []butler.UnhealthyNodeCondition{{Status: "Maybe", Timeout: metav1.Duration{Duration: time.Second}}}}
		}, []fieldErr{required("spec.workers.autoRepair.unhealthyConditions[0].type"), notSupp("spec.workers.autoRepair.unhealthyConditions[0].status"),
			invalid("spec.workers.autoRepair.unhealthyConditions[0].timeout"), invalid("spec.workers.autoRepair.nodeStartupTimeout"),
			invalid("spec.workers.autoRepair.maxUnhealthy")}},
	})
}
