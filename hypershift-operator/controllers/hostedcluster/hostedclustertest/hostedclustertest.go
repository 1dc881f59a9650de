// Package hostedclustertest runs the HostedCluster controller inside a test process,
// with the cache and client options the hypershift-operator runs with, so
// that tests of the controller and of the CLI exercise the same setup.
package hostedclustertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/fencing"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/scheme"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// OperatorNamespace is the namespace a test operator takes as its own.
const OperatorNamespace = "hypershift"

// StartOperator runs the HostedCluster controller (and, with fencing on, the
// fencing controller) as cfg's user until the test ends or the returned
// function stops it, with no election, metrics or probes. mutate, when set,
// changes the reconciler before it starts (its TeardownTimeout is 3s).
func StartOperator(t testing.TB, cfg *rest.Config, mutate func(*hostedcluster.Reconciler)) (stop func()) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.New(),
		Cache:                  hostedcluster.CacheOptions(),
		Client:                 hostedcluster.ClientOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &hostedcluster.Reconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		Releases:                    releaseinfo.NewRegistryProvider(),
		ControlPlaneOperatorTimings: config.DefaultControlPlaneOperatorTimings,
		Recorder:                    mgr.GetEventRecorder(hostedcluster.FieldOwner),
		TeardownTimeout:             3 * time.Second,
		Probe:                       hostedcluster.ImpersonatingProbe{Config: cfg},
	}
	if mutate != nil {
		mutate(r)
	}
	if r.Heartbeats != nil {
		if err := r.Heartbeats.Watch(mgr); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SetupCaches(t.Context(), mgr); err != nil {
		t.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if r.Fencing.Active() {
		if err := (&fencing.Reconciler{Client: mgr.GetClient(), FieldOwner: hostedcluster.FieldOwner, Namespace: OperatorNamespace}).SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("the operator stopped with an error: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// BindClusterRole creates the operator's ClusterRole, if missing, and binds
// it, and only it, to user, as `hypershift install` binds the operator's
// ServiceAccount; and, as install does, confines user's ClusterRoleBinding
// writes with rbac.ClusterRoleBindingPolicy (one of its own, removed when
// the test ends), enforced before it returns.
func BindClusterRole(t testing.TB, env *testenv.Env, user string) {
	t.Helper()
	testenv.BindClusterRole(t, env.Client, rbac.ClusterRole(), user)
	policy, binding := rbac.ClusterRoleBindingPolicy(user)
	policy.Name = user + "." + policy.Name
	binding.Name, binding.Spec.PolicyName = policy.Name, policy.Name
	for _, obj := range []client.Object{policy, binding} {
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(t.Context()), obj) })
	}
	// The API server compiles policies in the background: wait until user
	// may not delete its own binding (a dry run: nothing is removed).
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	as, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		err := as.Delete(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}}, client.DryRunAll)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), policy.Name) {
			return fmt.Errorf("policy %s is not enforced yet: %w", policy.Name, err)
		}
		return nil
	})
}
