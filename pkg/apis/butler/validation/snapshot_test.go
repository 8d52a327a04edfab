package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
)

func validSnapshot() *butler.TenantClusterSnapshot {
	return &butler.TenantClusterSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-0900", Namespace: "team-a", ResourceVersion: "1",
			Labels: map[string]string{butler.ClusterLabel: "prod"}},
		Spec: butler.TenantClusterSnapshotSpec{ClusterRef: butler.LocalObjectReference{Name: "prod"}},
	}
}

func readySnapshot() *butler.TenantClusterSnapshot {
	s := validSnapshot()
	s.Status = butler.TenantClusterSnapshotStatus{Phase: butler.SnapshotReady, Revision: 42, ObjectCount: 10, Bytes: 100,
		Checksum: "sha256:" + strings.Repeat("ab", 32), Location: "/snapshots/team-a/prod-0900", KubernetesVersion: "v1.36.3"}
	return s
}

func TestValidateTenantClusterSnapshot(t *testing.T) {
	runCreateCases(t, validSnapshot, ValidateTenantClusterSnapshot, []createCase[butler.TenantClusterSnapshot]{
		{"cluster scoped", func(o *butler.TenantClusterSnapshot) { o.Namespace = "" }, []fieldErr{required("metadata.namespace")}},
		{"no clusterRef", func(o *butler.TenantClusterSnapshot) { o.Spec.ClusterRef.Name = ""; o.Labels = nil }, []fieldErr{required("spec.clusterRef.name")}},
		{"label names another cluster", func(o *butler.TenantClusterSnapshot) { o.Labels[butler.ClusterLabel] = "staging" },
			[]fieldErr{invalid("metadata.labels[" + butler.ClusterLabel + "]")}},
	})
}

func TestValidateTenantClusterSnapshotUpdate(t *testing.T) {
	runUpdateCases(t, validSnapshot, ValidateTenantClusterSnapshotUpdate, []updateCase[butler.TenantClusterSnapshot]{
		{"another label", func(o *butler.TenantClusterSnapshot) { o.Labels["keep"] = "yes" }, nil},
		{"another cluster", func(o *butler.TenantClusterSnapshot) {
			o.Spec.ClusterRef.Name = "staging"
			o.Labels[butler.ClusterLabel] = "staging"
		}, []fieldErr{invalid("spec")}},
		{"label removed", func(o *butler.TenantClusterSnapshot) { delete(o.Labels, butler.ClusterLabel) },
			[]fieldErr{invalid("metadata.labels[" + butler.ClusterLabel + "]")}},
	})
}

func TestValidateTenantClusterSnapshotStatusUpdate(t *testing.T) {
	runUpdateCases(t, validSnapshot, ValidateTenantClusterSnapshotStatusUpdate, []updateCase[butler.TenantClusterSnapshot]{
		{"ready", func(o *butler.TenantClusterSnapshot) { o.Status = readySnapshot().Status }, nil},
		{"unknown phase", func(o *butler.TenantClusterSnapshot) { o.Status.Phase = "Done" }, []fieldErr{notSupp("status.phase")}},
		{"bad checksum", func(o *butler.TenantClusterSnapshot) { o.Status.Checksum = "md5:abc" }, []fieldErr{invalid("status.checksum")}},
		{"ready without data", func(o *butler.TenantClusterSnapshot) { o.Status.Phase = butler.SnapshotReady },
			[]fieldErr{required("status.checksum"), required("status.location")}},
		{"negative counts", func(o *butler.TenantClusterSnapshot) {
			o.Status.Revision, o.Status.ObjectCount, o.Status.Bytes = -1, -1, -1
		},
			[]fieldErr{invalid("status.revision"), invalid("status.objectCount"), invalid("status.bytes")}},
	})
	// A Ready snapshot's data is fixed.
	old, changed := readySnapshot(), readySnapshot()
	changed.Status.Checksum = "sha256:" + strings.Repeat("cd", 32)
	changed.Status.Revision = 43
	expectErrors(t, ValidateTenantClusterSnapshotStatusUpdate(changed, old), invalid("status.checksum"), invalid("status.revision"))
}

func TestValidateRestoreFrom(t *testing.T) {
	withRestore := func(name, confirm string) func() *butler.TenantCluster {
		return func() *butler.TenantCluster {
			tc := validTenantCluster()
			tc.Spec.RestoreFrom = &butler.RestoreSource{Name: name, Confirm: confirm}
			return tc
		}
	}
	// A new cluster from a snapshot needs no confirmation.
	expectErrors(t, ValidateTenantCluster(withRestore("prod-0900", "")()))
	expectErrors(t, ValidateTenantCluster(withRestore("Bad_Name", "")()), invalid("spec.restoreFrom.name"))

	old := validTenantCluster()
	for _, tc := range []struct {
		name    string
		obj     *butler.TenantCluster
		old     *butler.TenantCluster
		wantErr []fieldErr
	}{
		{"in place without confirm", withRestore("prod-0900", "")(), old, []fieldErr{invalid("spec.restoreFrom.confirm")}},
		{"in place, wrong confirm", withRestore("prod-0900", "staging")(), old, []fieldErr{invalid("spec.restoreFrom.confirm")}},
		{"in place, confirmed", withRestore("prod-0900", old.Name)(), old, nil},
		{"unchanged after create", withRestore("prod-0900", "")(), withRestore("prod-0900", "")(), nil},
		{"another snapshot needs confirm", withRestore("prod-1000", "")(), withRestore("prod-0900", "")(), []fieldErr{invalid("spec.restoreFrom.confirm")}},
		{"cleared", validTenantCluster(), withRestore("prod-0900", "")(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, ValidateTenantClusterUpdate(tc.obj, tc.old), tc.wantErr...) })
	}
}

func TestValidateSnapshotStore(t *testing.T) {
	bc := func(s *butler.SnapshotStore) *butler.ButlerConfig {
		return &butler.ButlerConfig{ObjectMeta: metav1.ObjectMeta{Name: "butler"}, Spec: butler.ButlerConfigSpec{SnapshotStore: s}}
	}
	expectErrors(t, ValidateButlerConfig(bc(&butler.SnapshotStore{Directory: &butler.DirectorySnapshotStore{Path: "/var/lib/butler/snapshots"}})))
	expectErrors(t, ValidateButlerConfig(bc(&butler.SnapshotStore{})), required("spec.snapshotStore"))
	expectErrors(t, ValidateButlerConfig(bc(&butler.SnapshotStore{Directory: &butler.DirectorySnapshotStore{Path: "snapshots/../x"}})), invalid("spec.snapshotStore.directory.path"))
}

func TestValidateS3SnapshotStore(t *testing.T) {
	bc := func(mutate func(*butler.S3SnapshotStore)) *butler.ButlerConfig {
		s3 := &butler.S3SnapshotStore{Endpoint: "https://s3.example.com", Bucket: "snapshots", Prefix: "butler/",
			CredentialsSecretRef: butler.NamespacedObjectReference{Name: "s3-credentials", Namespace: "butler-system"}}
		mutate(s3)
		return &butler.ButlerConfig{ObjectMeta: metav1.ObjectMeta{Name: "butler"}, Spec: butler.ButlerConfigSpec{SnapshotStore: &butler.SnapshotStore{S3: s3}}}
	}
	p := "spec.snapshotStore.s3."
	for _, c := range []struct {
		name   string
		mutate func(*butler.S3SnapshotStore)
		want   []fieldErr
	}{
		{"valid", func(*butler.S3SnapshotStore) {}, nil},
		{"loopback http", func(s *butler.S3SnapshotStore) { s.Endpoint = "http://127.0.0.1:8333" }, nil},
		{"no endpoint", func(s *butler.S3SnapshotStore) { s.Endpoint = "" }, []fieldErr{required(p + "endpoint")}},
		{"ftp", func(s *butler.S3SnapshotStore) { s.Endpoint = "ftp://s3.example.com" }, []fieldErr{invalid(p + "endpoint")}},
		{"keys in the URL", func(s *butler.S3SnapshotStore) { s.Endpoint = "https://AKIA:secret@s3.example.com" }, []fieldErr{invalid(p + "endpoint")}},
		{"a path", func(s *butler.S3SnapshotStore) { s.Endpoint = "https://s3.example.com/snapshots" }, []fieldErr{invalid(p + "endpoint")}},
		{"bucket", func(s *butler.S3SnapshotStore) { s.Bucket = "Snap_Shots" }, []fieldErr{invalid(p + "bucket")}},
		{"no bucket", func(s *butler.S3SnapshotStore) { s.Bucket = "" }, []fieldErr{required(p + "bucket")}},
		{"prefix climbs", func(s *butler.S3SnapshotStore) { s.Prefix = "a/../../b" }, []fieldErr{invalid(p + "prefix")}},
		{"no secret", func(s *butler.S3SnapshotStore) { s.CredentialsSecretRef = butler.NamespacedObjectReference{} },
			[]fieldErr{required(p + "credentialsSecretRef.name"), required(p + "credentialsSecretRef.namespace")}},
	} {
		t.Run(c.name, func(t *testing.T) { expectErrors(t, ValidateButlerConfig(bc(c.mutate)), c.want...) })
	}
	both := bc(func(*butler.S3SnapshotStore) {})
	both.Spec.SnapshotStore.Directory = &butler.DirectorySnapshotStore{Path: "/snapshots"}
	expectErrors(t, ValidateButlerConfig(both), forbidden("spec.snapshotStore.s3"))
}

func TestValidateSnapshotPolicy(t *testing.T) {
	withPolicy := func(name string, p *butler.SnapshotPolicy) *butler.TenantCluster {
		tc := validTenantCluster()
		tc.Name = name
		tc.Spec.Snapshots = p
		return tc
	}
	nightly := butler.SnapshotSchedule{Name: "nightly", Schedule: "0 2 * * *", Location: "Europe/Berlin", Keep: 7}
	s0 := "spec.snapshots.schedules[0]."
	for _, c := range []struct {
		name    string
		cluster string
		policy  butler.SnapshotPolicy
		want    []fieldErr
	}{
		{"valid", "prod", butler.SnapshotPolicy{Schedules: []butler.SnapshotSchedule{nightly,
			{Name: "hourly", Schedule: "@hourly", Keep: 24}}, OnClusterDelete: butler.SnapshotsDelete}, nil},
		{"every field wrong", "prod", butler.SnapshotPolicy{Schedules: []butler.SnapshotSchedule{
			{Name: "Nightly", Schedule: "0 25 * * *", Location: "Mars/Olympus", Keep: 0}}, OnClusterDelete: "Keep"},
			[]fieldErr{invalid(s0 + "name"), invalid(s0 + "schedule"), invalid(s0 + "location"), invalid(s0 + "keep"), notSupp("spec.snapshots.onClusterDelete")}},
		{"missing", "prod", butler.SnapshotPolicy{Schedules: []butler.SnapshotSchedule{{Keep: 1}}},
			[]fieldErr{required(s0 + "name"), required(s0 + "schedule")}},
		{"time zone in the expression", "prod", butler.SnapshotPolicy{Schedules: []butler.SnapshotSchedule{
			{Name: "n", Schedule: "CRON_TZ=UTC 0 2 * * *", Keep: 1}}}, []fieldErr{invalid(s0 + "schedule")}},
		{"keep too many", "prod", butler.SnapshotPolicy{Schedules: []butler.SnapshotSchedule{{Name: "n", Schedule: "@daily", Keep: 101}}},
			[]fieldErr{invalid(s0 + "keep")}},
		{"keep the most", "prod", butler.SnapshotPolicy{Schedules: []butler.SnapshotSchedule{{Name: "n", Schedule: "*/15 * * * *", Keep: 100}}}, nil},
		{"too many schedules", "prod", butler.SnapshotPolicy{Schedules: []butler.SnapshotSchedule{
			{Name: "a", Schedule: "@daily", Keep: 1}, {Name: "b", Schedule: "@daily", Keep: 1}, {Name: "c", Schedule: "@daily", Keep: 1},
			{Name: "d", Schedule: "@daily", Keep: 1}, {Name: "e", Schedule: "@daily", Keep: 1}}},
			[]fieldErr{tooMany("spec.snapshots.schedules")}},
		{"duplicate", "prod", butler.SnapshotPolicy{Schedules: []butler.SnapshotSchedule{nightly, nightly}},
			[]fieldErr{dup("spec.snapshots.schedules[1].name")}},
		{"snapshot names too long", strings.Repeat("a", 200), butler.SnapshotPolicy{Schedules: []butler.SnapshotSchedule{
			{Name: strings.Repeat("b", 50), Schedule: "@daily", Keep: 1}}}, []fieldErr{tooLong(s0 + "name")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			expectErrors(t, ValidateTenantCluster(withPolicy(c.cluster, &c.policy)), c.want...)
			old := withPolicy(c.cluster, nil)
			expectErrors(t, ValidateTenantClusterUpdate(withPolicy(c.cluster, &c.policy), old), c.want...)
		})
	}
}
