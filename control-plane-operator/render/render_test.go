package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/testutil"
)

const testReleaseImage = "registry.example.com/ocp/release@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func testInputs(policy hyperv1.AvailabilityPolicy) Inputs {
	return Inputs{
		HostedControlPlane: &hyperv1.HostedControlPlane{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   "clusters-demo",
				Name:        "demo",
				Annotations: map[string]string{hyperv1.ClusterAnnotation: "clusters/demo", "unrelated": "not copied"},
			},
			Spec: hyperv1.HostedControlPlaneSpec{
				ReleaseImage:                 testReleaseImage,
				ControllerAvailabilityPolicy: policy,
				Platform:                     hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
				Networking: hyperv1.ClusterNetworking{
					ClusterNetwork: []hyperv1.ClusterNetworkEntry{{CIDR: "10.132.0.0/14", HostPrefix: 23}},
					ServiceNetwork: []hyperv1.ServiceNetworkEntry{{CIDR: "172.31.0.0/16"}},
				},
				PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
				Etcd:       hyperv1.EtcdSpec{ManagementType: hyperv1.Managed},
			},
		},
		Release: testRelease("4.17.0", "0"),
	}
}

func testRelease(version, digit string) *releaseinfo.ReleaseImage {
	return &releaseinfo.ReleaseImage{
		PullSpec: testReleaseImage,
		Version:  version,
		ComponentImages: map[string]string{
			"etcd":       "registry.example.com/ocp/etcd@sha256:" + strings.Repeat("e"+digit, 32),
			"hyperkube":  "registry.example.com/ocp/hyperkube@sha256:" + strings.Repeat("a"+digit, 32),
			"hypershift": "registry.example.com/ocp/hypershift@sha256:" + strings.Repeat("b"+digit, 32),
		},
	}
}

func mustRender(t *testing.T, in Inputs) []Component {
	t.Helper()
	components, err := Components(in)
	if err != nil {
		t.Fatalf("Components: %v", err)
	}
	return components
}

// TestComponentsGolden compares every rendered object with its golden file.
func TestComponentsGolden(t *testing.T) {
	for _, p := range []hyperv1.AvailabilityPolicy{hyperv1.SingleReplica, hyperv1.HighlyAvailable} {
		t.Run(string(p), func(t *testing.T) {
			dir := strings.ToLower(string(p)) + "/"
			var rendered []string
			for _, c := range mustRender(t, testInputs(p)) {
				testutil.CompareWithGolden(t, dir+c.Name+"-deployment", c.Deployment)
				rendered = append(rendered, c.Name+"-deployment.yaml")
				if c.Service != nil {
					testutil.CompareWithGolden(t, dir+c.Name+"-service", c.Service)
					rendered = append(rendered, c.Name+"-service.yaml")
				}
			}
			// A golden file nothing renders any more is a stale object.
			entries, err := os.ReadDir(filepath.Join("testdata", dir))
			if err != nil {
				t.Fatal(err)
			}
			var golden []string
			for _, e := range entries {
				golden = append(golden, e.Name())
			}
			if diff := cmp.Diff(golden, rendered, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("golden files and rendered objects differ (-golden +rendered):\n%s", diff)
			}
		})
	}
}

func TestComponentsArePodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	for _, p := range []hyperv1.AvailabilityPolicy{hyperv1.SingleReplica, hyperv1.HighlyAvailable} {
		for _, c := range mustRender(t, testInputs(p)) {
			tmpl := &c.Deployment.Spec.Template
			if agg := policy.AggregateCheckResults(evaluator.EvaluatePod(restricted, &tmpl.ObjectMeta, &tmpl.Spec)); !agg.Allowed {
				t.Errorf("%s (%s) violates Pod Security restricted: %s: %s", c.Name, p, agg.ForbiddenReason(), agg.ForbiddenDetail())
			}
		}
	}
}

func TestComponentsAreRenderedInApplyOrder(t *testing.T) {
	var got []string
	for _, c := range mustRender(t, testInputs(hyperv1.SingleReplica)) {
		got = append(got, c.Name)
		if c.Deployment.Name != c.Name || c.Deployment.Namespace != "clusters-demo" {
			t.Errorf("%s: Deployment is %s/%s, want clusters-demo/%s", c.Name, c.Deployment.Namespace, c.Deployment.Name, c.Name)
		}
		if diff := cmp.Diff(map[string]string{"app": c.Name}, c.Deployment.Spec.Selector.MatchLabels); diff != "" {
			t.Errorf("%s: the selector must be app only (-want +got):\n%s", c.Name, diff)
		}
		if diff := cmp.Diff(map[string]string{hyperv1.ClusterAnnotation: "clusters/demo"}, c.Deployment.Annotations); diff != "" {
			t.Errorf("%s: annotations (-want +got):\n%s", c.Name, diff)
		}
	}
	if diff := cmp.Diff(ComponentNames, got); diff != "" {
		t.Errorf("components (-want +got):\n%s", diff)
	}
}

func TestReplicas(t *testing.T) {
	tests := []struct {
		name      string
		component string
		policy    hyperv1.AvailabilityPolicy
		want      int32
	}{
		{name: "when SingleReplica, etcd runs one", component: Etcd, policy: hyperv1.SingleReplica, want: 1},
		{name: "when SingleReplica, kube-apiserver runs one", component: KubeAPIServer, policy: hyperv1.SingleReplica, want: 1},
		{name: "when SingleReplica, kube-controller-manager runs one", component: KubeControllerManager, policy: hyperv1.SingleReplica, want: 1},
		{name: "when SingleReplica, kube-scheduler runs one", component: KubeScheduler, policy: hyperv1.SingleReplica, want: 1},
		{name: "when HighlyAvailable, etcd runs a quorum of three", component: Etcd, policy: hyperv1.HighlyAvailable, want: 3},
		{name: "when HighlyAvailable, kube-apiserver runs three", component: KubeAPIServer, policy: hyperv1.HighlyAvailable, want: 3},
		{name: "when HighlyAvailable, kube-controller-manager runs a leader and a standby", component: KubeControllerManager, policy: hyperv1.HighlyAvailable, want: 2},
		{name: "when HighlyAvailable, kube-scheduler runs a leader and a standby", component: KubeScheduler, policy: hyperv1.HighlyAvailable, want: 2},
		{name: "when the policy is unset, it runs one", component: KubeAPIServer, policy: "", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Replicas(tt.component, tt.policy); got != tt.want {
				t.Errorf("Replicas(%q, %q) = %d, want %d", tt.component, tt.policy, got, tt.want)
			}
			if tt.policy == "" {
				return
			}
			for _, c := range mustRender(t, testInputs(tt.policy)) {
				if c.Name == tt.component && *c.Deployment.Spec.Replicas != tt.want {
					t.Errorf("the rendered Deployment has %d replicas, want %d", *c.Deployment.Spec.Replicas, tt.want)
				}
			}
		})
	}
}

func TestImageTag(t *testing.T) {
	tests := []struct {
		name      string
		component string
		want      string
	}{
		{name: "etcd runs the etcd image", component: Etcd, want: "etcd"},
		{name: "kube-apiserver runs hyperkube", component: KubeAPIServer, want: "hyperkube"},
		{name: "kube-controller-manager runs hyperkube", component: KubeControllerManager, want: "hyperkube"},
		{name: "kube-scheduler runs hyperkube", component: KubeScheduler, want: "hyperkube"},
		{name: "an unknown component has no image", component: "kube-proxy", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ImageTag(tt.component); got != tt.want {
				t.Errorf("ImageTag(%q) = %q, want %q", tt.component, got, tt.want)
			}
		})
	}
}

func TestComponentsErrors(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Inputs)
		wantErr string
	}{
		{name: "when the payload has no hyperkube image, the error names the tag, the component and the payload", mutate: func(in *Inputs) { delete(in.Release.ComponentImages, "hyperkube") },
			wantErr: `release image ` + testReleaseImage + ` has no "hyperkube" image, needed by kube-apiserver`},
		{name: "when the hyperkube image is empty, it counts as missing", mutate: func(in *Inputs) { in.Release.ComponentImages["hyperkube"] = "" },
			wantErr: `has no "hyperkube" image, needed by kube-apiserver`},
		{name: "when the payload has no etcd image, the error names it", mutate: func(in *Inputs) { delete(in.Release.ComponentImages, "etcd") },
			wantErr: `has no "etcd" image, needed by etcd`},
		{name: "when the payload carries no pull spec, the error names the HostedControlPlane's release image", mutate: func(in *Inputs) {
			in.Release.PullSpec = ""
			delete(in.Release.ComponentImages, "etcd")
		}, wantErr: `release image ` + testReleaseImage + ` has no "etcd" image`},
		{name: "when there is no HostedControlPlane, rendering is refused", mutate: func(in *Inputs) { in.HostedControlPlane = nil }, wantErr: "no HostedControlPlane to render"},
		{name: "when there is no release payload, rendering is refused", mutate: func(in *Inputs) { in.Release = nil }, wantErr: "no release payload to render HostedControlPlane clusters-demo/demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInputs(hyperv1.SingleReplica)
			tt.mutate(&in)
			components, err := Components(in)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
			}
			if components != nil {
				t.Errorf("want no components with an error, got %d", len(components))
			}
		})
	}
}

func TestServicesOnlyForServedComponents(t *testing.T) {
	want := map[string]struct {
		port int32
		name string
	}{
		Etcd:          {port: 2379, name: "client"},
		KubeAPIServer: {port: 6443, name: "https"},
	}
	for _, c := range mustRender(t, testInputs(hyperv1.HighlyAvailable)) {
		w, served := want[c.Name]
		if !served {
			if c.Service != nil {
				t.Errorf("%s: want no Service, got one", c.Name)
			}
			continue
		}
		if c.Service == nil {
			t.Fatalf("%s: want a Service, got none", c.Name)
		}
		if c.Service.Spec.Type != "ClusterIP" || len(c.Service.Spec.Ports) != 1 {
			t.Fatalf("%s: want one ClusterIP port, got %+v", c.Name, c.Service.Spec)
		}
		p := c.Service.Spec.Ports[0]
		if p.Port != w.port || p.Name != w.name || p.TargetPort.StrVal != w.name {
			t.Errorf("%s: port = %d %q -> %q, want %d %q -> %q", c.Name, p.Port, p.Name, p.TargetPort.String(), w.port, w.name, w.name)
		}
		if diff := cmp.Diff(map[string]string{"app": c.Name}, c.Service.Spec.Selector); diff != "" {
			t.Errorf("%s: selector (-want +got):\n%s", c.Name, diff)
		}
	}
}

func TestFeatureGates(t *testing.T) {
	custom := func(set configv1.FeatureSet, enabled, disabled []configv1.FeatureGateName) *hyperv1.ClusterConfiguration {
		return &hyperv1.ClusterConfiguration{FeatureGate: &configv1.FeatureGateSpec{FeatureGateSelection: configv1.FeatureGateSelection{
			FeatureSet: set, CustomNoUpgrade: &configv1.CustomFeatureGates{Enabled: enabled, Disabled: disabled},
		}}}
	}
	tests := []struct {
		name   string
		config *hyperv1.ClusterConfiguration
		want   string
	}{
		{name: "when nothing is configured, no gates are passed", config: nil},
		{name: "when no feature gate is configured, no gates are passed", config: &hyperv1.ClusterConfiguration{}},
		{name: "when the feature set is not CustomNoUpgrade, its custom gates are ignored", config: custom(configv1.TechPreviewNoUpgrade, []configv1.FeatureGateName{"Foo"}, nil)},
		{name: "when CustomNoUpgrade, enabled and disabled gates are passed sorted by name",
			config: custom(configv1.CustomNoUpgrade, []configv1.FeatureGateName{"Zeta", "Alpha", "Foo"}, []configv1.FeatureGateName{"Beta", "Foo.Bar"}),
			want:   "--feature-gates=Alpha=true,Beta=false,Foo=true,Foo.Bar=false,Zeta=true"},
		{name: "when a gate is both enabled and disabled, it is disabled",
			config: custom(configv1.CustomNoUpgrade, []configv1.FeatureGateName{"Foo"}, []configv1.FeatureGateName{"Foo"}),
			want:   "--feature-gates=Foo=false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInputs(hyperv1.SingleReplica)
			in.HostedControlPlane.Spec.Configuration = tt.config
			for _, c := range mustRender(t, in) {
				var got string
				for _, a := range c.Deployment.Spec.Template.Spec.Containers[0].Args {
					if strings.HasPrefix(a, "--feature-gates") {
						got = a
					}
				}
				want := tt.want
				if c.Name == Etcd {
					want = ""
				}
				if got != want {
					t.Errorf("%s: feature gates = %q, want %q", c.Name, got, want)
				}
			}
		})
	}
}
