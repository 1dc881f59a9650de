package fencing

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/config"
)

// Unfenced removes, for an operator that runs with fencing off, the
// bindings of its own fence that a fenced run left: they would go on
// judging its writes by Leases nobody renews any more (a shard's after
// --shards=1, its own after --leader-elect=false), and refuse them. The
// CPO's policies stay, selecting nothing (the HostedCluster controller
// drops their namespace label).
type Unfenced struct {
	// Reader lists the bindings once, from the API server: no cache of
	// them is kept for this.
	Reader client.Reader
	// Client deletes them.
	Client client.Client
}

// Add runs Remove on mgr, once per term, until it succeeds.
func (u Unfenced) Add(mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: 1 << 30}
		_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			if err := u.Remove(ctx); err != nil {
				logf.FromContext(ctx).Error(err, "Failed to remove the operator's fencing bindings left from a fenced run; trying again")
				return false, nil
			}
			return true, nil
		})
		return nil
	}))
}

// Remove deletes the operator's fencing bindings of every shard: one
// list, and a delete for each found. An API server without
// ValidatingAdmissionPolicy has none.
func (u Unfenced) Remove(ctx context.Context) error {
	ours := map[string]bool{}
	for i := range config.MaxShards {
		for _, name := range render.OperatorShardBindingNames(i) {
			ours[name] = true
		}
	}
	bindings := &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}
	if err := u.Reader.List(ctx, bindings); meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("failed to list ValidatingAdmissionPolicyBindings: %w", err)
	}
	for i := range bindings.Items {
		binding := &bindings.Items[i]
		if !ours[binding.Name] {
			continue
		}
		if err := u.Client.Delete(ctx, binding, client.Preconditions{UID: &binding.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to delete ValidatingAdmissionPolicyBinding %s, of the operator's fence, which is off: %w", binding.Name, err)
		}
		logf.FromContext(ctx).Info("Deleted a fencing binding of the operator: fencing is off", "name", binding.Name)
	}
	return nil
}
