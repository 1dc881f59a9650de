package install

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cli"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/test/auditlog"
)

// TestLeaderElectionFlowSchemaPrecedence checks the FlowSchema's place among
// the API server's own: after those for its components, before the ones
// that would otherwise take every ServiceAccount's Lease traffic.
func TestLeaderElectionFlowSchemaPrecedence(t *testing.T) {
	fs := leaderElectionFlowSchema(nil)
	before := map[string]bool{"service-accounts": true, "global-default": true, "catch-all": true}
	builtins := append(slices.Clone(bootstrap.MandatoryFlowSchemas), bootstrap.SuggestedFlowSchemas...)
	for _, builtin := range builtins {
		ours, theirs := fs.Spec.MatchingPrecedence, builtin.Spec.MatchingPrecedence
		if before[builtin.Name] && ours >= theirs {
			t.Errorf("matchingPrecedence %d must be below %s's %d, or %s takes the Lease traffic", ours, builtin.Name, theirs, builtin.Name)
		}
		if !before[builtin.Name] && ours <= theirs {
			t.Errorf("matchingPrecedence %d must be above %s's %d, or it takes that FlowSchema's traffic", ours, builtin.Name, theirs)
		}
	}
	if len(builtins) < len(before) {
		t.Fatalf("only %d built-in FlowSchemas to compare with", len(builtins))
	}
	if got := fs.Spec.PriorityLevelConfiguration.Name; got != leaderElectionPriorityLevel(nil).Name {
		t.Errorf("the FlowSchema refers to priority level %q, not the one install renders", got)
	}
}

// classification is what the API server answered about one request: its
// audit ID and the UIDs of the FlowSchema and priority level it matched
// (the names stay private to the server; the UIDs are sent back).
type classification struct {
	auditID, flowSchemaUID, priorityLevelUID string
}

// classifier records the classification of every response to an
// identity's requests.
type classifier struct {
	mu   sync.Mutex
	seen []classification
}

// wrap returns a RoundTripper that records into c.
func (c *classifier) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil {
			c.mu.Lock()
			c.seen = append(c.seen, classification{
				auditID:          resp.Header.Get(auditinternal.HeaderAuditID),
				flowSchemaUID:    resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID),
				priorityLevelUID: resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID),
			})
			c.mu.Unlock()
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// take returns the classifications recorded since the last take.
func (c *classifier) take() []classification {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.seen
	c.seen = nil
	return seen
}

// flowUIDs are the UIDs of a live FlowSchema and of its priority level.
type flowUIDs struct{ flowSchema, priorityLevel string }

func liveFlow(t *testing.T, name string) flowUIDs {
	t.Helper()
	fs := &flowcontrolv1.FlowSchema{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, fs); err != nil {
		t.Fatalf("failed to get FlowSchema %s: %v", name, err)
	}
	pl := &flowcontrolv1.PriorityLevelConfiguration{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: fs.Spec.PriorityLevelConfiguration.Name}, pl); err != nil {
		t.Fatalf("failed to get the priority level of FlowSchema %s: %v", name, err)
	}
	return flowUIDs{flowSchema: string(fs.UID), priorityLevel: string(pl.UID)}
}

// applyLeaderElectionFlow applies the FlowSchema and priority level exactly
// as install renders them.
func applyLeaderElectionFlow(t *testing.T) {
	t.Helper()
	applier := apply.Applier{Client: env.Client, FieldOwner: cli.FieldOwner}
	applied := 0
	for _, obj := range ResourceObjects(DefaultOptions()) {
		switch obj.(type) {
		case *flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration:
			if _, err := applier.Apply(t.Context(), obj); err != nil {
				t.Fatal(err)
			}
			applied++
		}
	}
	if applied != 2 {
		t.Fatalf("install renders %d flow-control objects, want a FlowSchema and a PriorityLevelConfiguration", applied)
	}
}

// grantLeases lets users do what the test asks of them, so that every
// request succeeds as it would for an operator with its Role.
func grantLeases(t *testing.T, users ...string) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "flowcontrol-test-"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}},
		},
	}
	if err := env.Client.Create(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
	}
	for _, user := range users {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user})
	}
	if err := env.Client.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, role)
	})
}

// identity is a user the test makes requests as, with its own recorder.
type identity struct {
	user, namespace string
	groups          []string
	// leaseFlow is the FlowSchema its namespaced Lease requests must match;
	// otherFlow the one everything else it sends must match.
	leaseFlow, otherFlow string
	client               kubernetes.Interface
	recorder             *classifier
}

func serviceAccount(name, namespace, leaseFlow string) *identity {
	return &identity{
		namespace: namespace,
		user:      "system:serviceaccount:" + namespace + ":" + name,
		groups:    []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		leaseFlow: leaseFlow, otherFlow: "service-accounts",
	}
}

func (id *identity) connect(t *testing.T) {
	t.Helper()
	cfg, err := env.AddUser(id.user, id.groups...)
	if err != nil {
		t.Fatal(err)
	}
	id.recorder = &classifier{}
	cfg.WrapTransport = id.recorder.wrap
	if id.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
}

// step is one request, with what the audit log must show of it.
type step struct {
	name           string
	verb, resource string
	allNamespaces  bool
	// leaderElection says the request is one of leader election, which
	// the FlowSchema must claim for a ServiceAccount.
	leaderElection bool
	do             func(ctx context.Context, c kubernetes.Interface, ns string) error
}

var leaseName = hyperv1.ControlPlaneOperatorLeaseName

var leaderElectionSteps = []step{
	{name: "create the Lease", verb: "create", resource: "leases", leaderElection: true, do: func(ctx context.Context, c kubernetes.Interface, ns string) error {
		_, err := c.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName}}, metav1.CreateOptions{})
		return err
	}},
	{name: "get the Lease", verb: "get", resource: "leases", leaderElection: true, do: func(ctx context.Context, c kubernetes.Interface, ns string) error {
		_, err := c.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
		return err
	}},
	{name: "renew the Lease", verb: "update", resource: "leases", leaderElection: true, do: func(ctx context.Context, c kubernetes.Interface, ns string) error {
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leaseName}, lease); err != nil { // as the admin
			return err
		}
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-a"), LeaseDurationSeconds: ptr.To[int32](60), RenewTime: &metav1.MicroTime{Time: time.Now()}}
		_, err := c.CoordinationV1().Leases(ns).Update(ctx, lease, metav1.UpdateOptions{})
		return err
	}},
	{name: "patch the Lease", verb: "patch", resource: "leases", do: func(ctx context.Context, c kubernetes.Interface, ns string) error {
		_, err := c.CoordinationV1().Leases(ns).Patch(ctx, leaseName, types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"true"}}}`), metav1.PatchOptions{})
		return err
	}},
	{name: "list the Lease by name", verb: "list", resource: "leases", leaderElection: true, do: func(ctx context.Context, c kubernetes.Interface, ns string) error {
		_, err := c.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", leaseName).String()})
		return err
	}},
	{name: "watch the Lease by name", verb: "watch", resource: "leases", leaderElection: true, do: func(ctx context.Context, c kubernetes.Interface, ns string) error {
		w, err := c.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", leaseName).String()})
		if err == nil {
			w.Stop()
		}
		return err
	}},
	{name: "list Leases in all namespaces", verb: "list", resource: "leases", allNamespaces: true, do: func(ctx context.Context, c kubernetes.Interface, _ string) error {
		_, err := c.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})
		return err
	}},
	{name: "list ConfigMaps", verb: "list", resource: "configmaps", do: func(ctx context.Context, c kubernetes.Interface, ns string) error {
		_, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err
	}},
}

// waitForFlowSchema makes Lease requests as id until the API server's
// flow-control configuration, which follows FlowSchemas asynchronously,
// classifies them to the FlowSchema install renders.
func waitForFlowSchema(t *testing.T, id *identity, flows map[string]flowUIDs) {
	t.Helper()
	var last classification
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, _ = id.client.CoordinationV1().Leases(id.namespace).Get(ctx, "probe", metav1.GetOptions{}) // a 404 is classified too
		for _, c := range id.recorder.take() {
			last = c
		}
		return last.flowSchemaUID == flows[LeaderElectionFlowName].flowSchema, nil
	})
	if err != nil {
		t.Fatalf("the API server did not classify Lease requests to FlowSchema %s within a minute (the last went to FlowSchema %s): %v",
			LeaderElectionFlowName, nameOf(flows, last.flowSchemaUID), err)
	}
}

// auditEvent waits until the audit log holds the request auditID and
// returns its last event.
func auditEvent(t *testing.T, auditID string) auditv1.Event {
	t.Helper()
	var found *auditv1.Event
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		events, err := env.AuditEvents()
		if err != nil {
			return false, err
		}
		for i := range events {
			if string(events[i].AuditID) == auditID {
				found = &events[i]
			}
		}
		return found != nil, nil
	})
	if err != nil {
		t.Fatalf("the audit log has no request %s: %v", auditID, err)
	}
	return *found
}

// TestLeaderElectionFlowSchemaClassifiesLeaseTraffic applies the rendered
// FlowSchema and priority level to a real API server and makes requests as
// users shaped like the operators' ServiceAccounts (and one that is not a
// ServiceAccount). The audit log says who sent each request and what it
// was; the API server's flow-control response headers, joined to it by the
// audit ID, say which FlowSchema and priority level it was classified to
// (the audit log itself does not record that: kube-apiserver writes
// apf_fs/apf_pl only to its HTTP log).
func TestLeaderElectionFlowSchemaClassifiesLeaseTraffic(t *testing.T) {
	applyLeaderElectionFlow(t)
	flows := map[string]flowUIDs{
		LeaderElectionFlowName: liveFlow(t, LeaderElectionFlowName),
		"service-accounts":     liveFlow(t, "service-accounts"),
		"global-default":       liveFlow(t, "global-default"),
	}

	plainUser := &identity{ // not a ServiceAccount
		namespace: env.Namespace(t),
		groups:    []string{"system:authenticated"},
		leaseFlow: "global-default", otherFlow: "global-default",
	}
	plainUser.user = "lease-user-" + plainUser.namespace
	identities := []*identity{
		serviceAccount(hyperv1.ControlPlaneOperatorName, env.Namespace(t), LeaderElectionFlowName),
		serviceAccount(name, env.Namespace(t), LeaderElectionFlowName),
		plainUser,
	}
	users := []string{}
	for _, id := range identities {
		id.connect(t)
		users = append(users, id.user)
	}
	grantLeases(t, users...)
	waitForFlowSchema(t, identities[0], flows)

	for _, id := range identities {
		t.Run(id.user, func(t *testing.T) {
			id.recorder.take()
			for _, s := range leaderElectionSteps {
				t.Run(s.name, func(t *testing.T) {
					id.recorder.take()
					if err := s.do(t.Context(), id.client, id.namespace); err != nil {
						t.Fatalf("request failed: %v", err)
					}
					seen := id.recorder.take()
					if len(seen) != 1 {
						t.Fatalf("want one response, got %d", len(seen))
					}
					got := seen[0]
					event := auditEvent(t, got.auditID)
					wantNamespace := id.namespace
					if s.allNamespaces {
						wantNamespace = ""
					}
					if event.User.Username != id.user || !slices.Contains(event.User.Groups, id.groups[0]) || event.Verb != s.verb ||
						event.ObjectRef == nil || event.ObjectRef.Resource != s.resource || event.ObjectRef.Namespace != wantNamespace || !auditlog.Succeeded(event) {
						t.Fatalf("the audit log shows a different request: %s %v %s %+v %+v", event.User.Username, event.User.Groups, event.Verb, event.ObjectRef, event.ResponseStatus)
					}
					wantFlow := id.otherFlow
					if s.leaderElection {
						wantFlow = id.leaseFlow
					}
					want := flows[wantFlow]
					if got.flowSchemaUID != want.flowSchema || got.priorityLevelUID != want.priorityLevel {
						t.Errorf("request %s (%s %s) was classified to FlowSchema %s, priority level %s; want %s (FlowSchema %s, priority level %s)",
							got.auditID, s.verb, s.resource, nameOf(flows, got.flowSchemaUID), got.priorityLevelUID, wantFlow, want.flowSchema, want.priorityLevel)
					}
				})
			}
		})
	}
}

// nameOf names a FlowSchema by UID, for messages.
func nameOf(flows map[string]flowUIDs, uid string) string {
	for name, f := range flows {
		if f.flowSchema == uid {
			return name
		}
	}
	return "with UID " + uid
}
