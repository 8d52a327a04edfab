package storage

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/v1alpha1"
	"github.com/butlerdotdev/butler-apiserver/pkg/apis/butler/validation"
	"github.com/butlerdotdev/butler-apiserver/pkg/registry/butler/resource"
)

// ApproveREST is updateruns/approve: a POST of an UpdateRunApproval naming a stage marks that
// stage's waiting approval task done, recording who and when, in the run's status (the controller
// then goes on). Being a create on its own subresource, RBAC grants it apart from editing runs:
// a Team's admins hold it, its viewers do not, and no Team role reaches another Team's
// namespace. A stage that does not wait for approval is a 409 naming its phase.
type ApproveREST struct {
	status *resource.StatusREST
	now    func() time.Time
}

var (
	_ rest.NamedCreater             = &ApproveREST{}
	_ rest.GroupVersionKindProvider = &ApproveREST{}
)

var approvalKind = v1alpha1.SchemeGroupVersion.WithKind("UpdateRunApproval")

// New returns an empty UpdateRunApproval.
func (r *ApproveREST) New() runtime.Object { return &butler.UpdateRunApproval{} }

// Destroy does nothing: the store is shared with the main resource.
func (r *ApproveREST) Destroy() {}

// GroupVersionKind says the subresource speaks UpdateRunApproval, not UpdateRun.
func (r *ApproveREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return approvalKind
}

// Create approves the named stage of the UpdateRun called name.
func (r *ApproveREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*butler.UpdateRunApproval)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an UpdateRunApproval, got %T", obj))
	}
	if errs := validation.ValidateUpdateRunApproval(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(approvalKind.GroupKind(), name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	who, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("the request carries no user to record as the approver")
	}
	now := metav1.NewTime(r.now().Truncate(time.Second))
	approve := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		run := old.(*butler.UpdateRun).DeepCopy()
		return run, Approve(run, req.Spec.Stage, who.GetName(), now)
	}
	if _, _, err := r.status.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, approve), nil, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	out := req.DeepCopy()
	out.Name = name
	out.Status = butler.UpdateRunApprovalStatus{ApprovedBy: who.GetName(), ApprovalTime: &now}
	return out, nil
}

// Approve marks the stage's waiting approval task done by user at now: a 422 on spec.stage for a
// stage the run does not have, a 409 naming the stage's phase when it does not wait for approval.
func Approve(run *butler.UpdateRun, stage, user string, now metav1.Time) error {
	resource := v1alpha1.Resource("updateruns/approve")
	if run.Status.Strategy == nil {
		return apierrors.NewConflict(resource, run.Name, fmt.Errorf("the run has not started: no stage waits for approval yet"))
	}
	for i := range run.Status.Stages {
		s := &run.Status.Stages[i]
		if s.Name != stage {
			continue
		}
		for j := range s.Tasks {
			t := &s.Tasks[j]
			if t.Type == butler.TaskApproval && t.Phase == butler.TaskWaiting {
				t.Phase, t.ApprovedBy, t.CompletionTime = butler.TaskSucceeded, user, &now
				return nil
			}
		}
		phase := s.Phase
		if phase == "" {
			phase = butler.StagePending
		}
		return apierrors.NewConflict(resource, run.Name, fmt.Errorf("stage %q is %s, not waiting for approval", stage, phase))
	}
	names := planned(run)
	if slices.Contains(names, stage) {
		return apierrors.NewConflict(resource, run.Name, fmt.Errorf("stage %q is %s, not waiting for approval", stage, butler.StagePending))
	}
	return apierrors.NewInvalid(approvalKind.GroupKind(), run.Name, field.ErrorList{field.NotSupported(field.NewPath("spec", "stage"), stage, names)})
}

// planned are the run's stage names, from the strategy it froze when it started (none before).
func planned(run *butler.UpdateRun) []string {
	var names []string
	if run.Status.Strategy != nil {
		for _, s := range run.Status.Strategy.Stages {
			names = append(names, s.Name)
		}
	}
	return names
}
