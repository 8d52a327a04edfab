package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UpdateStrategy is a reusable order in which to upgrade clusters: stages of TenantClusters
// selected by label, each with its concurrency, its gate and the tasks that end it. An
// UpdateRun copies it when it starts, so editing it changes future runs only.
type UpdateStrategy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec UpdateStrategySpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// UpdateStrategySpec lists the stages in the order they run.
type UpdateStrategySpec struct {
	// Stages run one after the other; a cluster belongs to the first stage whose selector
	// matches it.
	// +listType=atomic
	Stages []UpdateStage `json:"stages" protobuf:"bytes,1,rep,name=stages"`
}

// UpdateStage is one group of clusters moved together.
type UpdateStage struct {
	// Name is a DNS label, unique in the strategy.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Selector selects TenantClusters by label; empty selects every cluster not taken by an
	// earlier stage.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty" protobuf:"bytes,2,opt,name=selector"`
	// MaxConcurrency is how many of the stage's clusters may be moving at once: a number, or a
	// percentage of the stage's clusters (rounded down, at least 1). 1 when unset.
	// +optional
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty" protobuf:"bytes,3,opt,name=maxConcurrency"`
	// HealthGate is what a moved cluster must show before it counts as done.
	// +optional
	HealthGate *HealthGate `json:"healthGate,omitempty" protobuf:"bytes,4,opt,name=healthGate"`
	// AfterStage are tasks run in order once every cluster of the stage is done, before the
	// next stage starts.
	// +optional
	// +listType=atomic
	AfterStage []UpdateTask `json:"afterStage,omitempty" protobuf:"bytes,5,rep,name=afterStage"`
}

// HealthGate says when a moved cluster is healthy: its control plane at the target version, and
// its conditions True, held for a while.
type HealthGate struct {
	// Conditions are TenantCluster condition types that must be True ([Ready] when empty).
	// +optional
	// +listType=atomic
	Conditions []string `json:"conditions,omitempty" protobuf:"bytes,1,rep,name=conditions"`
	// HoldFor is how long they must hold, unbroken, after the cluster reached the target.
	// +optional
	HoldFor metav1.Duration `json:"holdFor,omitempty" protobuf:"bytes,2,opt,name=holdFor"`
	// Timeout is how long a cluster may take from its move to passing the gate before it counts
	// as failed (30m when unset).
	// +optional
	Timeout metav1.Duration `json:"timeout,omitempty" protobuf:"bytes,3,opt,name=timeout"`
	// MaxFailed is how many of the stage's clusters may fail before the run applies its
	// onFailure; with onFailure Continue the stage goes on while at most this many failed.
	// +optional
	MaxFailed int32 `json:"maxFailed,omitempty" protobuf:"varint,4,opt,name=maxFailed"`
}

// UpdateTask is one task after a stage: exactly one of its fields is set.
type UpdateTask struct {
	// Wait waits for a duration.
	// +optional
	Wait *WaitTask `json:"wait,omitempty" protobuf:"bytes,1,opt,name=wait"`
	// Approval waits until someone allowed to create updateruns/approve approves the stage.
	// +optional
	Approval *ApprovalTask `json:"approval,omitempty" protobuf:"bytes,2,opt,name=approval"`
}

// WaitTask waits.
type WaitTask struct {
	Duration metav1.Duration `json:"duration" protobuf:"bytes,1,opt,name=duration"`
}

// ApprovalTask waits for an approval (updateruns/approve).
type ApprovalTask struct{}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UpdateStrategyList is a list of UpdateStrategies.
type UpdateStrategyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []UpdateStrategy `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +genclient:method=Approve,verb=create,subresource=approve,input=UpdateRunApproval,result=UpdateRunApproval
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UpdateRun upgrades the TenantClusters an UpdateStrategy selects to one Kubernetes version,
// stage by stage, through the same spec change a user makes. A run in a Team's namespace
// selects that namespace's clusters only; one in the platform namespace (butler-system)
// selects clusters of every namespace.
type UpdateRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   UpdateRunSpec   `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	Status UpdateRunStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// UpdateRunSpec is what to upgrade to, in which order, and what to do when something fails.
// Only state may change after create.
type UpdateRunSpec struct {
	// StrategyRef names an UpdateStrategy in the run's namespace.
	StrategyRef LocalObjectReference `json:"strategyRef" protobuf:"bytes,1,opt,name=strategyRef"`
	// Target is where the clusters go.
	Target UpdateTarget `json:"target" protobuf:"bytes,2,opt,name=target"`
	// SnapshotBeforeUpgrade takes a TenantClusterSnapshot of each cluster, and waits for it to be
	// Ready, before moving the cluster.
	// +optional
	SnapshotBeforeUpgrade bool `json:"snapshotBeforeUpgrade,omitempty" protobuf:"varint,3,opt,name=snapshotBeforeUpgrade"`
	// OnFailure is Pause (start no more clusters; the default), Abandon (stop for good) or
	// Continue (go on while the stage's healthGate.maxFailed holds).
	// +optional
	OnFailure UpdateFailurePolicy `json:"onFailure,omitempty" protobuf:"bytes,4,opt,name=onFailure,casttype=UpdateFailurePolicy"`
	// State is Run (the default), Plan (compute the stages, move nothing), Pause or Abandon.
	// +optional
	State UpdateRunState `json:"state,omitempty" protobuf:"bytes,5,opt,name=state,casttype=UpdateRunState"`
}

// UpdateTarget is a run's target.
type UpdateTarget struct {
	// KubernetesVersion must be offered by the platform's version catalog, not expired.
	KubernetesVersion string `json:"kubernetesVersion" protobuf:"bytes,1,opt,name=kubernetesVersion"`
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
	// +optional
	Strategy *UpdateStrategySpec `json:"strategy,omitempty" protobuf:"bytes,1,opt,name=strategy"`
	// +optional
	Phase UpdateRunPhase `json:"phase,omitempty" protobuf:"bytes,2,opt,name=phase,casttype=UpdateRunPhase"`
	// Message says what the run waits for, or why it stopped.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`
	// +optional
	// +listType=atomic
	Stages []StageStatus `json:"stages,omitempty" protobuf:"bytes,4,rep,name=stages"`
	// NotSelected are the clusters (namespace/name) the run could see that no stage selected:
	// never moved, listed so that none is left behind silently.
	// +optional
	// +listType=atomic
	NotSelected []string `json:"notSelected,omitempty" protobuf:"bytes,5,rep,name=notSelected"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,6,opt,name=startTime"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,7,opt,name=completionTime"`
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
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// +optional
	Phase StagePhase `json:"phase,omitempty" protobuf:"bytes,2,opt,name=phase,casttype=StagePhase"`
	// +optional
	// +listType=atomic
	Clusters []ClusterUpdateStatus `json:"clusters,omitempty" protobuf:"bytes,3,rep,name=clusters"`
	// Tasks are the stage's afterStage tasks' progress, in order.
	// +optional
	// +listType=atomic
	Tasks []TaskStatus `json:"tasks,omitempty" protobuf:"bytes,4,rep,name=tasks"`
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
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// +optional
	Phase ClusterUpdatePhase `json:"phase,omitempty" protobuf:"bytes,2,opt,name=phase,casttype=ClusterUpdatePhase"`
	// FromVersion is the cluster's version when the run moved it.
	// +optional
	FromVersion string `json:"fromVersion,omitempty" protobuf:"bytes,3,opt,name=fromVersion"`
	// Snapshot is the TenantClusterSnapshot taken before the move.
	// +optional
	Snapshot string `json:"snapshot,omitempty" protobuf:"bytes,4,opt,name=snapshot"`
	// StartTime is when the run moved it; HealthySince when it last started passing the gate.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,5,opt,name=startTime"`
	// +optional
	HealthySince *metav1.Time `json:"healthySince,omitempty" protobuf:"bytes,6,opt,name=healthySince"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,7,opt,name=completionTime"`
	// Message says what it waits for, or why it was skipped or failed.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,8,opt,name=message"`
}

// TaskStatus is one afterStage task's progress.
type TaskStatus struct {
	// Type is Wait or Approval.
	Type string `json:"type" protobuf:"bytes,1,opt,name=type"`
	// Phase is Pending, Waiting or Succeeded.
	// +optional
	Phase string `json:"phase,omitempty" protobuf:"bytes,2,opt,name=phase"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,3,opt,name=startTime"`
	// ApprovedBy is the user who approved (Approval).
	// +optional
	ApprovedBy string `json:"approvedBy,omitempty" protobuf:"bytes,4,opt,name=approvedBy"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,5,opt,name=completionTime"`
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
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []UpdateRun `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// UpdateRunApproval approves a stage of an UpdateRun that waits for approval (the
// updateruns/approve subresource, create only, so RBAC can grant it alone).
type UpdateRunApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec UpdateRunApprovalSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status UpdateRunApprovalStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// UpdateRunApprovalSpec names the stage approved.
type UpdateRunApprovalSpec struct {
	Stage string `json:"stage" protobuf:"bytes,1,opt,name=stage"`
}

// UpdateRunApprovalStatus records who approved and when.
type UpdateRunApprovalStatus struct {
	// +optional
	ApprovedBy string `json:"approvedBy,omitempty" protobuf:"bytes,1,opt,name=approvedBy"`
	// +optional
	ApprovalTime *metav1.Time `json:"approvalTime,omitempty" protobuf:"bytes,2,opt,name=approvalTime"`
}
