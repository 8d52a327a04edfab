package butler

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UpdateStrategy is a reusable order in which to upgrade clusters: stages of TenantClusters
// selected by label, each with its concurrency, its gate and the tasks that end it. An
// UpdateRun copies it when it starts, so editing it changes future runs only.
type UpdateStrategy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec UpdateStrategySpec `json:"spec"`
}

// UpdateStrategySpec lists the stages in the order they run.
type UpdateStrategySpec struct {
	// Stages run one after the other; a cluster belongs to the first stage whose selector
	// matches it.
	Stages []UpdateStage `json:"stages"`
}

// UpdateStage is one group of clusters moved together.
type UpdateStage struct {
	// Name is a DNS label, unique in the strategy.
	Name string `json:"name"`
	// Selector selects TenantClusters by label; empty selects every cluster not taken by an
	// earlier stage.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// MaxConcurrency is how many of the stage's clusters may be moving at once: a number, or a
	// percentage of the stage's clusters (rounded down, at least 1). 1 when unset.
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`
	// HealthGate is what a moved cluster must show before it counts as done.
	HealthGate *HealthGate `json:"healthGate,omitempty"`
	// AfterStage are tasks run in order once every cluster of the stage is done, before the
	// next stage starts.
	AfterStage []UpdateTask `json:"afterStage,omitempty"`
}

// HealthGate says when a moved cluster is healthy: its control plane at the target version, and
// its conditions True, held for a while.
type HealthGate struct {
	// Conditions are TenantCluster condition types that must be True ([Ready] when empty).
	Conditions []string `json:"conditions,omitempty"`
	// HoldFor is how long they must hold, unbroken, after the cluster reached the target.
	HoldFor metav1.Duration `json:"holdFor,omitempty"`
	// Timeout is how long a cluster may take from its move to passing the gate before it counts
	// as failed (30m when unset).
	Timeout metav1.Duration `json:"timeout,omitempty"`
	// MaxFailed is how many of the stage's clusters may fail before the run applies its
	// onFailure; with onFailure Continue the stage goes on while at most this many failed.
	MaxFailed int32 `json:"maxFailed,omitempty"`
}

// UpdateTask is one task after a stage: exactly one of its fields is set.
type UpdateTask struct {
	// Wait waits for a duration.
	Wait *WaitTask `json:"wait,omitempty"`
	// Approval waits until someone allowed to create updateruns/approve approves the stage.
	Approval *ApprovalTask `json:"approval,omitempty"`
}

// WaitTask waits.
type WaitTask struct {
	Duration metav1.Duration `json:"duration"`
}

// ApprovalTask waits for an approval (updateruns/approve).
type ApprovalTask struct{}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UpdateStrategyList is a list of UpdateStrategies.
type UpdateStrategyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UpdateStrategy `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UpdateRun upgrades the TenantClusters an UpdateStrategy selects to one Kubernetes version,
// stage by stage, through the same spec change a user makes. A run in a Team's namespace
// selects that namespace's clusters only; one in the platform namespace (butler-system)
// selects clusters of every namespace.
type UpdateRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UpdateRunSpec   `json:"spec"`
	Status UpdateRunStatus `json:"status,omitempty"`
}

// UpdateRunSpec is what to upgrade to, in which order, and what to do when something fails.
// Only state may change after create.
type UpdateRunSpec struct {
	// StrategyRef names an UpdateStrategy in the run's namespace.
	StrategyRef LocalObjectReference `json:"strategyRef"`
	// Target is where the clusters go.
	Target UpdateTarget `json:"target"`
	// SnapshotBeforeUpgrade takes a TenantClusterSnapshot of each cluster, and waits for it to be
	// Ready, before moving the cluster.
	SnapshotBeforeUpgrade bool `json:"snapshotBeforeUpgrade,omitempty"`
	// OnFailure is Pause (start no more clusters; the default), Abandon (stop for good) or
	// Continue (go on while the stage's healthGate.maxFailed holds).
	OnFailure UpdateFailurePolicy `json:"onFailure,omitempty"`
	// State is Run (the default), Plan (compute the stages, move nothing), Pause or Abandon.
	State UpdateRunState `json:"state,omitempty"`
}

// UpdateTarget is a run's target.
type UpdateTarget struct {
	// KubernetesVersion must be offered by the platform's version catalog, not expired.
	KubernetesVersion string `json:"kubernetesVersion"`
}

// UpdateFailurePolicy is what a run does when a cluster fails.
type UpdateFailurePolicy string

const (
	UpdateFailurePause    UpdateFailurePolicy = "Pause"
	UpdateFailureAbandon  UpdateFailurePolicy = "Abandon"
	UpdateFailureContinue UpdateFailurePolicy = "Continue"
)

// UpdateRunState is what the run's owner wants it to do.
type UpdateRunState string

const (
	UpdateRunStateRun     UpdateRunState = "Run"
	UpdateRunStatePlan    UpdateRunState = "Plan"
	UpdateRunStatePause   UpdateRunState = "Pause"
	UpdateRunStateAbandon UpdateRunState = "Abandon"
)

// UpdateRunPhase is where a run is.
type UpdateRunPhase string

const (
	UpdateRunPlanned            UpdateRunPhase = "Planned"
	UpdateRunRunning            UpdateRunPhase = "Running"
	UpdateRunWaiting            UpdateRunPhase = "Waiting"
	UpdateRunWaitingForApproval UpdateRunPhase = "WaitingForApproval"
	UpdateRunPaused             UpdateRunPhase = "Paused"
	UpdateRunSucceeded          UpdateRunPhase = "Succeeded"
	UpdateRunFailed             UpdateRunPhase = "Failed"
	UpdateRunAbandoned          UpdateRunPhase = "Abandoned"
)

// UpdateRunStatus shows per stage and per cluster what happened and why.
type UpdateRunStatus struct {
	// Strategy is the strategy's spec as it was when the run started: the run follows it, not
	// later edits.
	Strategy *UpdateStrategySpec `json:"strategy,omitempty"`
	Phase    UpdateRunPhase      `json:"phase,omitempty"`
	// Message says what the run waits for, or why it stopped.
	Message string        `json:"message,omitempty"`
	Stages  []StageStatus `json:"stages,omitempty"`
	// NotSelected are the clusters (namespace/name) the run could see that no stage selected:
	// never moved, listed so that none is left behind silently.
	NotSelected    []string     `json:"notSelected,omitempty"`
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// StagePhase is where a stage is.
type StagePhase string

const (
	StagePending            StagePhase = "Pending"
	StageRunning            StagePhase = "Running"
	StageWaiting            StagePhase = "Waiting"
	StageWaitingForApproval StagePhase = "WaitingForApproval"
	StageSucceeded          StagePhase = "Succeeded"
	StageFailed             StagePhase = "Failed"
)

// StageStatus is one stage's progress.
type StageStatus struct {
	Name     string                `json:"name"`
	Phase    StagePhase            `json:"phase,omitempty"`
	Clusters []ClusterUpdateStatus `json:"clusters,omitempty"`
	// Tasks are the stage's afterStage tasks' progress, in order.
	Tasks []TaskStatus `json:"tasks,omitempty"`
}

// ClusterUpdatePhase is where one cluster is in a run.
type ClusterUpdatePhase string

const (
	ClusterUpdatePending      ClusterUpdatePhase = "Pending"
	ClusterUpdateSnapshotting ClusterUpdatePhase = "Snapshotting"
	ClusterUpdateUpgrading    ClusterUpdatePhase = "Upgrading"
	ClusterUpdateSucceeded    ClusterUpdatePhase = "Succeeded"
	ClusterUpdateFailed       ClusterUpdatePhase = "Failed"
	ClusterUpdateSkipped      ClusterUpdatePhase = "Skipped"
	// ClusterUpdateHeld: another run is moving the cluster; this one waits for it.
	ClusterUpdateHeld ClusterUpdatePhase = "Held"
)

// ClusterUpdateStatus is one cluster's progress in a run.
type ClusterUpdateStatus struct {
	// Name is namespace/name.
	Name  string             `json:"name"`
	Phase ClusterUpdatePhase `json:"phase,omitempty"`
	// FromVersion is the cluster's version when the run moved it.
	FromVersion string `json:"fromVersion,omitempty"`
	// Snapshot is the TenantClusterSnapshot taken before the move.
	Snapshot string `json:"snapshot,omitempty"`
	// StartTime is when the run moved it; HealthySince when it last started passing the gate.
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	HealthySince   *metav1.Time `json:"healthySince,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message says what it waits for, or why it was skipped or failed.
	Message string `json:"message,omitempty"`
}

// TaskStatus is one afterStage task's progress.
type TaskStatus struct {
	// Type is Wait or Approval.
	Type string `json:"type"`
	// Phase is Pending, Waiting or Succeeded.
	Phase     string       `json:"phase,omitempty"`
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// ApprovedBy is the user who approved (Approval).
	ApprovedBy     string       `json:"approvedBy,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// Task types and phases.
const (
	TaskWait      = "Wait"
	TaskApproval  = "Approval"
	TaskPending   = "Pending"
	TaskWaiting   = "Waiting"
	TaskSucceeded = "Succeeded"
)

// UpdateRunHeldAnnotation on a TenantCluster names the UpdateRun (namespace/name) moving it.
// It is set with the version change, in the same write, so two runs cannot both take a cluster,
// and removed when the cluster passes or fails its gate; maintenance leaves a held cluster alone.
const UpdateRunHeldAnnotation = "butler.butlerlabs.dev/update-run"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UpdateRunList is a list of UpdateRuns.
type UpdateRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UpdateRun `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UpdateRunApproval approves a stage of an UpdateRun that waits for approval (the
// updateruns/approve subresource, create only, so RBAC can grant it alone).
type UpdateRunApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UpdateRunApprovalSpec   `json:"spec"`
	Status UpdateRunApprovalStatus `json:"status,omitempty"`
}

// UpdateRunApprovalSpec names the stage approved.
type UpdateRunApprovalSpec struct {
	Stage string `json:"stage"`
}

// UpdateRunApprovalStatus records who approved and when.
type UpdateRunApprovalStatus struct {
	ApprovedBy   string       `json:"approvedBy,omitempty"`
	ApprovalTime *metav1.Time `json:"approvalTime,omitempty"`
}
