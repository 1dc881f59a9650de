package leasearbiter

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Verbose() {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	os.Exit(testenv.Main(m, testenv.Options{AuditLog: true}, &env))
}

// short timings keep the candidates quick: LD 6s, RD 4s, RP 1s, renew
// every 2.7s. A standby that is not helped waits the 6s.
var short = config.Timings{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second}

// takeoverBound is what the issue allows from a gone pod to a new leader.
const takeoverBound = 2 * time.Second

var users atomic.Int32

// startArbiter runs the controller as a user of its own, bound to nothing
// but the hypershift-operator's ClusterRole, with the operator's cache
// options, until the test ends. mutate, when set, changes the reconciler
// before it starts. It returns the user, for the audit log.
func startArbiter(t *testing.T, mutate func(*Reconciler)) string {
	t.Helper()
	user := fmt.Sprintf("hypershift-operator-%d", users.Add(1))
	cfg, err := env.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	testenv.BindClusterRole(t, env.Client, rbac.ClusterRole(), user)
	cacheOptions := hostedcluster.CacheOptions()
	AddCacheOptions(&cacheOptions)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: env.Scheme, Cache: cacheOptions, Client: hostedcluster.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(hostedcluster.FieldOwner), Fencing: true}
	if mutate != nil {
		mutate(r)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the arbiter stopped with an error: %v", err)
		}
	})
	return user
}

// fence says how a test cluster's fence looks to the controller.
type fence int

const (
	// fenced: LeaderFencing=True, with the policy and the binding.
	fenced fence = iota
	// unfenced: LeaderFencing=False (fencing disabled), no binding.
	unfenced
	// unbound: LeaderFencing=True, but the binding is missing.
	unbound
)

// controlPlane is one HostedCluster's control-plane namespace under test.
type controlPlane struct {
	hc *hyperv1.HostedCluster
	ns string
}

// newControlPlane creates a HostedCluster in a namespace of its own, its
// control-plane namespace (labelled and claimed as the HO does) and, as
// fence says, its LeaderFencing condition and fencing objects.
func newControlPlane(t *testing.T, f fence) *controlPlane {
	t.Helper()
	ctx := t.Context()
	hc := &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "demo"},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: "example.com/release:4.17.0"},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
			Services:   hyperv1.NodePortServices("127.0.0.1", 0),
		},
	}
	if err := env.Client.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	cp := &controlPlane{hc: hc, ns: hyperv1.ControlPlaneNamespace(hc.Namespace, hc.Name)}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        cp.ns,
		Labels:      map[string]string{hyperv1.HostedControlPlaneLabel: "true"},
		Annotations: map[string]string{hyperv1.ClusterAnnotation: render.ClusterKey(hc)},
	}}
	if err := env.Client.Create(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), namespace) })
	cp.setFence(t, f)
	return cp
}

// setFence makes the HostedCluster's fence look as f says: the fencing
// policy and its binding and, for fenced, the namespace's fencing label,
// then, as the hypershift-operator observes them, its LeaderFencing
// condition.
func (cp *controlPlane) setFence(t *testing.T, f fence) {
	t.Helper()
	ctx := t.Context()
	for _, obj := range []client.Object{render.FencingPolicy(), render.FencingBinding()} {
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	namespace := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cp.ns}, namespace); err != nil {
		t.Fatal(err)
	}
	if f == fenced {
		namespace.Labels[render.LeaderFencingLabel] = "true"
	} else {
		delete(namespace.Labels, render.LeaderFencingLabel)
	}
	if err := env.Client.Update(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	status, reason := metav1.ConditionTrue, "AsExpected"
	if f == unfenced {
		status, reason = metav1.ConditionFalse, "Disabled"
	}
	cp.hc.Status.Conditions = []metav1.Condition{{Type: hostedcluster.LeaderFencing, Status: status, Reason: reason, Message: "set by the test", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, cp.hc); err != nil {
		t.Fatal(err)
	}
}

// pod creates a control-plane-operator pod named name and reports it
// Running, as a kubelet would.
func (cp *controlPlane) pod(t *testing.T, name string, finalizers ...string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: cp.ns, Name: name, Labels: PodLabels, Finalizers: finalizers},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: hyperv1.ControlPlaneOperatorName, Image: "example.com/hypershift:4.17.0"}}},
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if len(finalizers) > 0 {
		t.Cleanup(func() {
			p := &corev1.Pod{}
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), p); err == nil {
				p.Finalizers = nil
				_ = env.Client.Update(context.Background(), p)
			}
		})
	}
	setPodStatus(t, pod, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}})
	return pod
}

// setPodStatus sets the pod's phase and its container's state.
func setPodStatus(t *testing.T, pod *corev1.Pod, phase corev1.PodPhase, state corev1.ContainerState) {
	t.Helper()
	setContainerStatus(t, pod, phase, corev1.ContainerStatus{State: state})
}

// setContainerStatus reports pod in phase with status as its
// control-plane-operator container's, as a kubelet does.
func setContainerStatus(t *testing.T, pod *corev1.Pod, phase corev1.PodPhase, status corev1.ContainerStatus) {
	t.Helper()
	current := &corev1.Pod{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), current); err != nil {
		t.Fatal(err)
	}
	current.Status.Phase = phase
	status.Name, status.Image, status.ImageID = hyperv1.ControlPlaneOperatorName, current.Spec.Containers[0].Image, "example.com/hypershift@sha256:0"
	current.Status.ContainerStatuses = []corev1.ContainerStatus{status}
	if err := env.Client.Status().Update(t.Context(), current); err != nil {
		t.Fatal(err)
	}
}

// lease creates the CPO Lease naming holder, as a crashed leader leaves it.
func (cp *controlPlane) lease(t *testing.T, name, holder string) *coordinationv1.Lease {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: cp.ns, Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(60)),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To(int32(0)),
		},
	}
	if err := env.Client.Create(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	return lease
}

// holder reads the holder of Lease name in the namespace.
func (cp *controlPlane) holder(t *testing.T, name string) string {
	return env.Holder(t, cp.ns, name)
}

// events returns the notes of the HostedCluster's LeaseReleased events.
func (cp *controlPlane) releaseEvents(t *testing.T) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := env.Client.List(t.Context(), list, client.InNamespace(cp.hc.Namespace)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name == cp.hc.Name && e.Reason == "LeaseReleased" {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// candidate is a control-plane-operator's elector, in the test process, as
// a user of its own whose identity is its pod's name.
type candidate struct {
	name   string
	led    chan time.Time
	done   chan error
	cancel context.CancelFunc
}

// campaign starts a candidate for the CPO Lease of the namespace. It never
// releases the Lease when stopped: stopping it is a crash.
func (cp *controlPlane) campaign(t *testing.T, name string) *candidate {
	t.Helper()
	cfg, err := env.AddUser(cp.ns+"-"+name, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	leases, err := leaderelection.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := leaderelection.New(leaderelection.Config{
		Client: leases, Namespace: cp.ns, Name: hyperv1.ControlPlaneOperatorLeaseName, Identity: name,
		Timings: short, Log: testr.New(t).WithName(name), NoRelease: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{name: name, led: make(chan time.Time, 4), done: make(chan error, 1), cancel: cancel}
	go func() {
		c.done <- e.Run(ctx, func(ctx context.Context) error {
			c.led <- time.Now()
			<-ctx.Done()
			return nil
		})
	}()
	t.Cleanup(c.stop)
	return c
}

// stop ends the candidate as a crash would: the Lease stays held.
func (c *candidate) stop() {
	c.cancel()
	err := <-c.done
	c.done <- err // a second stop returns at once
}

// awaitLead waits up to timeout for the candidate to lead and returns when.
func (c *candidate) awaitLead(t *testing.T, timeout time.Duration) time.Time {
	t.Helper()
	select {
	case at := <-c.led:
		return at
	case <-time.After(timeout):
		t.Fatalf("%s did not lead within %s", c.name, timeout)
		return time.Time{}
	}
}

// leaseWrites returns the audited Lease writes by user in namespace.
func leaseWrites(t *testing.T, user, namespace string) []auditv1.Event {
	t.Helper()
	events, err := env.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var out []auditv1.Event
	for _, e := range events {
		if e.User.Username == user && e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Namespace == namespace && auditlog.IsWrite(e) {
			out = append(out, e)
		}
	}
	return out
}

func code(e auditv1.Event) int32 {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// describe lists audited requests: verb, object and response code.
func describe(events []auditv1.Event) string {
	parts := make([]string, 0, len(events))
	for _, e := range events {
		parts = append(parts, fmt.Sprintf("%s %s/%s %d", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name, code(e)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
