package testenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/api/crds"
	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// installAdmissionPolicies creates the project's admission policies (kept
// as they are when a kept state holds them) and waits until the API server
// enforces them: policies are compiled asynchronously, so a test that ran
// at once could see them absent.
func (e *Env) installAdmissionPolicies(ctx context.Context) error {
	policy, binding := crds.NamespaceLengthPolicy()
	for _, obj := range []client.Object{policy, binding} {
		if err := e.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	probe := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: strings.Repeat("x", hyperv1.MaxNamespaceLength-len("default"))},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: "example.com/release:probe"},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
			Services:   hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		lastErr = e.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return lastErr != nil && apierrors.IsInvalid(lastErr) && strings.Contains(lastErr.Error(), crds.NamespaceLengthPolicyName), nil
	})
	if err != nil {
		if lastErr == nil {
			lastErr = errors.New("the dry-run create was accepted")
		}
		return fmt.Errorf("admission policy %s was not enforced within 30s: %w", crds.NamespaceLengthPolicyName, errors.Join(err, lastErr))
	}
	return nil
}
