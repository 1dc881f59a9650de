package render

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/testutil"
)

func testInputs(policy hyperv1.AvailabilityPolicy) Inputs {
	return Inputs{
		HostedCluster: &hyperv1.HostedCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "demo"},
			Spec: hyperv1.HostedClusterSpec{
				Release:                      hyperv1.Release{Image: "registry.example.com/ocp/release:4.17.0"},
				ControllerAvailabilityPolicy: policy,
				Platform:                     hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
				Networking: hyperv1.ClusterNetworking{
					ClusterNetwork: []hyperv1.ClusterNetworkEntry{{CIDR: "10.132.0.0/14"}},
					ServiceNetwork: []hyperv1.ServiceNetworkEntry{{CIDR: "172.31.0.0/16"}},
				},
				PullSecret:  hyperv1.LocalObjectReference{Name: "demo-pull-secret"},
				InfraID:     "demo-x7k2p",
				Etcd:        hyperv1.EtcdSpec{ManagementType: hyperv1.Managed},
				PausedUntil: ptr.To("true"),
				Services: []hyperv1.ServicePublishingStrategyMapping{{Service: hyperv1.APIServer, ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{
					Type: hyperv1.NodePort, NodePort: &hyperv1.NodePortPublishingStrategy{Address: "api.demo.example.com", Port: 30443},
				}}},
			},
		},
		ReleaseImage:                "registry.example.com/ocp/release@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		ControlPlaneOperatorImage:   "registry.example.com/ocp/hypershift@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
		ControlPlaneOperatorTimings: config.DefaultControlPlaneOperatorTimings,
	}
}

// TestRenderGolden compares every rendered object with its golden file.
func TestRenderGolden(t *testing.T) {
	for _, policy := range []hyperv1.AvailabilityPolicy{hyperv1.SingleReplica, hyperv1.HighlyAvailable} {
		in := testInputs(policy)
		if err := in.Validate(); err != nil {
			t.Fatal(err)
		}
		dir := strings.ToLower(string(policy)) + "/"
		t.Run(string(policy), func(t *testing.T) {
			testutil.CompareWithGolden(t, dir+"namespace", Namespace(in))
			testutil.CompareWithGolden(t, dir+"pull-secret", PullSecret(in, []byte(`{"auths":{}}`)))
			testutil.CompareWithGolden(t, dir+"hostedcontrolplane", HostedControlPlane(in))
			testutil.CompareWithGolden(t, dir+"serviceaccount", ControlPlaneOperatorServiceAccount(in))
			testutil.CompareWithGolden(t, dir+"role", ControlPlaneOperatorRole(in))
			testutil.CompareWithGolden(t, dir+"rolebinding", ControlPlaneOperatorRoleBinding(in))
			testutil.CompareWithGolden(t, dir+"auth-delegator", ControlPlaneOperatorAuthDelegator(in))
			testutil.CompareWithGolden(t, dir+"metrics-service", ControlPlaneOperatorMetricsService(in))
			testutil.CompareWithGolden(t, dir+"servicemonitor", ControlPlaneOperatorServiceMonitor(in))
			testutil.CompareWithGolden(t, dir+"deployment", ControlPlaneOperatorDeployment(in))
			if budget := ControlPlaneOperatorDisruptionBudget(in); policy == hyperv1.HighlyAvailable {
				testutil.CompareWithGolden(t, dir+"poddisruptionbudget", budget)
			} else if budget != nil {
				t.Errorf("a single CPO replica got a PodDisruptionBudget, which would block every drain of its node: %+v", budget.Spec)
			}
			testutil.CompareWithGolden(t, dir+"admin-kubeconfig", AdminKubeconfig(in, []byte("apiVersion: v1\nkind: Config\n")))
		})
	}
}

// podInputs are a HostedCluster of platform Pod's inputs.
func podInputs() Inputs {
	in := testInputs(hyperv1.SingleReplica)
	in.HostedCluster.Spec.Platform.Type = hyperv1.PodPlatform
	in.ClusterAPIImage = "registry.example.com/ocp/cluster-api@sha256:aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999"
	in.ClusterAPITimings = config.ClusterAPITimings
	in.MachineImage = "registry.example.com/ocp/machine@sha256:1111222233334444555566667777888899990000aaaabbbbccccddddeeeeffff"
	in.SandboxImage = "registry.example.com/ocp/pod@sha256:ffffeeeeddddccccbbbbaaaa0000999988887777666655554444333322221111"
	return in
}

// TestRenderPodPlatformGolden compares what differs on platform Pod with
// golden files: the namespace (Pod Security privileged, for the machines),
// the control-plane-operator's Role and Deployment (it runs the machines),
// and the cluster-api manager and Cluster.
func TestRenderPodPlatformGolden(t *testing.T) {
	in := podInputs()
	in.Fenced = true
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	testutil.CompareWithGolden(t, "pod/namespace", Namespace(in))
	testutil.CompareWithGolden(t, "pod/role", ControlPlaneOperatorRole(in))
	testutil.CompareWithGolden(t, "pod/deployment", ControlPlaneOperatorDeployment(in))
	objects := ClusterAPIObjects(in)
	if len(objects) != 8 {
		t.Fatalf("%d cluster-api objects", len(objects))
	}
	for _, obj := range objects {
		testutil.CompareWithGolden(t, "pod/cluster-api-"+strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind), obj)
	}
	if objects := ClusterAPIObjects(testInputs(hyperv1.SingleReplica)); len(objects) != 0 {
		t.Errorf("platform None runs a cluster-api manager: %v", objects)
	}
	// A payload without platform Pod's images: no cache, nothing refused
	// (its NodePools say what is missing).
	noMachine := podInputs()
	noMachine.MachineImage = ""
	if objects := ClusterAPIObjects(noMachine); len(objects) != 7 || MachineImageCache(noMachine) != nil {
		t.Errorf("a payload without a machine image renders a machine image cache: %v", objects)
	}
	in.ClusterAPIImage = ""
	if err := in.Validate(); err == nil || !strings.Contains(err.Error(), "no cluster-api manager image") {
		t.Errorf("platform Pod without a cluster-api image: %v", err)
	}
}

func TestPodPlatformWorkloadsAreRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, cache := ClusterAPIDeployment(podInputs()), MachineImageCache(podInputs())
	for what, template := range map[string]*corev1.PodTemplateSpec{"cluster-api manager": &d.Spec.Template, "machine image cache": &cache.Spec.Template} {
		results := evaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &template.ObjectMeta, &template.Spec)
		if agg := policy.AggregateCheckResults(results); !agg.Allowed {
			t.Errorf("the %s's pod template violates Pod Security restricted: %s: %s", what, agg.ForbiddenReason(), agg.ForbiddenDetail())
		}
	}
}

func TestFencingPolicyGolden(t *testing.T) {
	testutil.CompareWithGolden(t, "fencing-policy", FencingPolicy())
	testutil.CompareWithGolden(t, "fencing-binding", FencingBinding())
}

func TestClusterAPIFencingGolden(t *testing.T) {
	testutil.CompareWithGolden(t, "cluster-api-fencing-policy", ClusterAPIFencingPolicy())
	testutil.CompareWithGolden(t, "cluster-api-fencing-binding", ClusterAPIFencingBinding())
}

func TestControlPlaneOperatorDeploymentIsRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := ControlPlaneOperatorDeployment(testInputs(hyperv1.HighlyAvailable))
	results := evaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec)
	if agg := policy.AggregateCheckResults(results); !agg.Allowed {
		t.Fatalf("the CPO pod template violates Pod Security restricted: %s: %s", agg.ForbiddenReason(), agg.ForbiddenDetail())
	}
}

func TestControlPlaneOperatorDeployment(t *testing.T) {
	tests := []struct {
		name         string
		policy       hyperv1.AvailabilityPolicy
		wantReplicas int32
	}{
		{name: "when SingleReplica, it runs one CPO", policy: hyperv1.SingleReplica, wantReplicas: 1},
		{name: "when HighlyAvailable, it runs a leader and a standby", policy: hyperv1.HighlyAvailable, wantReplicas: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInputs(tt.policy)
			d := ControlPlaneOperatorDeployment(in)
			if got := *d.Spec.Replicas; got != tt.wantReplicas {
				t.Errorf("replicas = %d, want %d", got, tt.wantReplicas)
			}
			if d.Spec.Strategy.Type != "Recreate" {
				t.Errorf("strategy = %q, want Recreate", d.Spec.Strategy.Type)
			}
			args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
			for _, want := range []string{"--leader-elect=true", "--leader-elect-lease-duration=1m0s", "--leader-elect-renew-deadline=45s", "--leader-elect-retry-period=2s", "--leader-elect-renew-interval=30s", "--leader-elect-resource-name=control-plane-operator-leader-elect"} {
				if !strings.Contains(args, want) {
					t.Errorf("args %q lack %q", args, want)
				}
			}
			if grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second; grace <= in.ControlPlaneOperatorTimings.RenewDeadline {
				t.Errorf("termination grace period %s leaves no time to release the Lease after the renew deadline %s", grace, in.ControlPlaneOperatorTimings.RenewDeadline)
			}
		})
	}
}

func TestInputsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Inputs)
		wantErr string
	}{
		{name: "when everything is set, it is valid", mutate: func(*Inputs) {}},
		{name: "when no CPO image is known, rendering is refused", mutate: func(in *Inputs) { in.ControlPlaneOperatorImage = "" }, wantErr: "no control-plane-operator image"},
		{name: "when no release image is known, rendering is refused", mutate: func(in *Inputs) { in.ReleaseImage = "" }, wantErr: "no release image"},
		{name: "when the CPO log level is a name, it is valid", mutate: func(in *Inputs) { setLogLevel(in, "debug") }},
		{name: "when the CPO log level is a verbosity, it is valid", mutate: func(in *Inputs) { setLogLevel(in, "4") }},
		{name: "when the CPO log level is unknown, rendering is refused", mutate: func(in *Inputs) { setLogLevel(in, "verbose") },
			wantErr: `annotation hypershift.openshift.io/control-plane-operator-log-level is "verbose": want debug, info, error or a verbosity from 1 up`},
		{name: "when the CPO log level is 0, rendering is refused", mutate: func(in *Inputs) { setLogLevel(in, "0") }, wantErr: "want debug, info, error or a verbosity from 1 up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInputs(hyperv1.SingleReplica)
			tt.mutate(&in)
			err := in.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
			}
		})
	}
}

func TestLeaseGuardGolden(t *testing.T) {
	testutil.CompareWithGolden(t, "lease-guard-policy", LeaseGuardPolicy())
	testutil.CompareWithGolden(t, "lease-guard-binding", LeaseGuardBinding())
}

func TestKeepAliveGolden(t *testing.T) {
	testutil.CompareWithGolden(t, "keepalive-policy", KeepAlivePolicy())
	for i, binding := range KeepAliveBindings("hypershift") {
		testutil.CompareWithGolden(t, fmt.Sprintf("keepalive-binding-%d", i), binding)
	}
}

func TestOperatorShardFencingGolden(t *testing.T) {
	testutil.CompareWithGolden(t, "operator-shard-fencing-policy", OperatorFencingPolicy("hypershift", "hypershift-operator"))
	testutil.CompareWithGolden(t, "operator-shard-object-fencing-policy", OperatorObjectFencingPolicy("hypershift", "hypershift-operator"))
	bindings := OperatorShardBindings(1, "1-of-4", "hypershift", "hypershift-operator-leader-elect-shard-1")
	testutil.CompareWithGolden(t, "operator-shard-fencing-binding", bindings[0])
	testutil.CompareWithGolden(t, "operator-shard-object-fencing-binding", bindings[1])
}

// TestNamespaceCarriesItsOperatorShard: the shard label is set when the
// inputs name a shard, and absent otherwise.
func TestNamespaceCarriesItsOperatorShard(t *testing.T) {
	hc := &hyperv1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "demo"}}
	if got, ok := Namespace(Inputs{HostedCluster: hc, OperatorShard: "1-of-4"}).Labels[hyperv1.OperatorShardLabel]; got != "1-of-4" {
		t.Errorf("label %s is %q (%v), want 1-of-4", hyperv1.OperatorShardLabel, got, ok)
	}
	if got, ok := Namespace(Inputs{HostedCluster: hc}).Labels[hyperv1.OperatorShardLabel]; ok {
		t.Errorf("label %s is %q without a shard, want none", hyperv1.OperatorShardLabel, got)
	}
}

// TestSetOperatorShard: the label is set, changed and removed, and an
// object already as wanted is reported unchanged (no write).
func TestSetOperatorShard(t *testing.T) {
	obj := &metav1.ObjectMeta{}
	for _, step := range []struct {
		shard   string
		changed bool
	}{{"", false}, {"0-of-2", true}, {"0-of-2", false}, {"1-of-4", true}, {"", true}, {"", false}} {
		if differs := OperatorShardDiffers(obj, step.shard); differs != step.changed {
			t.Errorf("OperatorShardDiffers(%q) is %v, want %v", step.shard, differs, step.changed)
		}
		if changed := SetOperatorShard(obj, step.shard); changed != step.changed {
			t.Errorf("SetOperatorShard(%q) changed %v, want %v", step.shard, changed, step.changed)
		}
		if got, ok := obj.Labels[hyperv1.OperatorShardLabel]; got != step.shard || ok != (step.shard != "") {
			t.Errorf("after SetOperatorShard(%q) the label is %q (%v)", step.shard, got, ok)
		}
	}
}

// TestClusterOfReadsWhatClusterKeyWrites: the annotation round-trips, and
// values that name no HostedCluster are refused.
func TestClusterOfReadsWhatClusterKeyWrites(t *testing.T) {
	hc := testInputs(hyperv1.SingleReplica).HostedCluster
	obj := &metav1.ObjectMeta{Annotations: map[string]string{hyperv1.ClusterAnnotation: ClusterKey(hc)}}
	if got, ok := ClusterOf(obj); !ok || got.Namespace != hc.Namespace || got.Name != hc.Name {
		t.Fatalf("ClusterOf = %v, %v; want %s/%s", got, ok, hc.Namespace, hc.Name)
	}
	for _, value := range []string{"", "demo", "/demo", "clusters/", "/"} {
		obj := &metav1.ObjectMeta{Annotations: map[string]string{hyperv1.ClusterAnnotation: value}}
		if got, ok := ClusterOf(obj); ok {
			t.Errorf("ClusterOf(%q) = %v, want none", value, got)
		}
	}
	if got, ok := ClusterOf(&metav1.ObjectMeta{}); ok {
		t.Errorf("ClusterOf(no annotation) = %v, want none", got)
	}
}

func setLogLevel(in *Inputs, level string) {
	in.HostedCluster.Annotations = map[string]string{hyperv1.ControlPlaneOperatorLogLevelAnnotation: level}
}

// TestControlPlaneOperatorLogLevel checks that the annotation reaches the
// CPO's arguments, and that without it the CPO runs at its default.
func TestControlPlaneOperatorLogLevel(t *testing.T) {
	in := testInputs(hyperv1.SingleReplica)
	if args := ControlPlaneOperatorDeployment(in).Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--zap-log-level") }) {
		t.Fatalf("without the annotation the args set a log level: %v", args)
	}
	setLogLevel(&in, "debug")
	if args := ControlPlaneOperatorDeployment(in).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--zap-log-level=debug") {
		t.Fatalf("args %v, want --zap-log-level=debug", args)
	}
}

// TestControlPlaneOperatorInsecureRegistries: the CPO reads the payloads
// the HO reads, from the same plain-HTTP registries.
func TestControlPlaneOperatorInsecureRegistries(t *testing.T) {
	in := testInputs(hyperv1.SingleReplica)
	if args := ControlPlaneOperatorDeployment(in).Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--insecure-registries") }) {
		t.Fatalf("with none, the args name insecure registries: %v", args)
	}
	in.InsecureRegistries = []string{"198.18.0.1:5000", "mirror.internal:5000"}
	if args := ControlPlaneOperatorDeployment(in).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--insecure-registries=198.18.0.1:5000,mirror.internal:5000") {
		t.Fatalf("args %v, want --insecure-registries=198.18.0.1:5000,mirror.internal:5000", args)
	}
}

// TestHostedControlPlaneCarriesTheSizingAnnotations: the annotations that
// size the control plane reach the HostedControlPlane, which the
// control-plane-operator reads; no other annotation does.
func TestHostedControlPlaneCarriesTheSizingAnnotations(t *testing.T) {
	in := testInputs(hyperv1.SingleReplica)
	override := hyperv1.ResourceRequestOverrideAnnotationPrefix + "/etcd.etcd"
	in.HostedCluster.Annotations = map[string]string{
		override: "memory=1Gi",
		hyperv1.KubeAPIServerGoMemoryLimitAnnotation: "800MiB",
		hyperv1.KubeAPIServerGOGCAnnotation:          "50",
		"example.com/unrelated":                      "x",
	}
	got := HostedControlPlane(in).Annotations
	want := map[string]string{
		hyperv1.ClusterAnnotation: ClusterKey(in.HostedCluster),
		override:                  "memory=1Gi",
		hyperv1.KubeAPIServerGoMemoryLimitAnnotation: "800MiB",
		hyperv1.KubeAPIServerGOGCAnnotation:          "50",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("HostedControlPlane annotations %v, want %v", got, want)
	}
}
