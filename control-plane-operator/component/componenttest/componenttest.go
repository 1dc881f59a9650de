// Package componenttest checks a hosted control plane component against
// the contract's expectations in its own package's tests: golden files of
// everything it renders, for SingleReplica and HighlyAvailable, and Pod
// Security "restricted" for its pods.
package componenttest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/releaseinfo"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// ReleaseImage is the test payload's pull spec.
const ReleaseImage = "registry.example.com/ocp/release@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// Policies are the availability policies every component is rendered for.
var Policies = []hyperv1.AvailabilityPolicy{hyperv1.SingleReplica, hyperv1.HighlyAvailable}

// Inputs are fixed inputs for policy: a HostedControlPlane published on a
// NodePort, a payload with etcd, hyperkube and hypershift images, the
// ClusterIPs of every Service, and the hash of every Secret.
func Inputs(policy hyperv1.AvailabilityPolicy) component.Inputs {
	hashes := map[string]string{}
	for _, name := range []string{
		pki.RootCASecret, pki.EtcdSignerSecret, pki.EtcdServerSecret, pki.EtcdPeerSecret, pki.EtcdClientSecret,
		pki.KubeAPIServerSecret, pki.ServiceAccountKeySecret, pki.AdminKubeconfigSecret,
		pki.KubeControllerManagerKubeconfigSecret, pki.KubeSchedulerKubeconfigSecret, pki.KubeletClientSecret,
	} {
		hashes[name] = strings.Repeat(string(rune('a'+len(name)%26)), 32)
	}
	return component.Inputs{
		HostedControlPlane: &hyperv1.HostedControlPlane{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   "clusters-demo",
				Name:        "demo",
				Annotations: map[string]string{hyperv1.ClusterAnnotation: "clusters/demo", "unrelated": "not copied"},
			},
			Spec: hyperv1.HostedControlPlaneSpec{
				ReleaseImage:                 ReleaseImage,
				ControllerAvailabilityPolicy: policy,
				Platform:                     hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
				Networking: hyperv1.ClusterNetworking{
					ClusterNetwork: []hyperv1.ClusterNetworkEntry{{CIDR: "10.132.0.0/14", HostPrefix: 23}},
					ServiceNetwork: []hyperv1.ServiceNetworkEntry{{CIDR: "172.31.0.0/16"}},
				},
				Services: []hyperv1.ServicePublishingStrategyMapping{{
					Service: hyperv1.APIServer,
					ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{
						Type:     hyperv1.NodePort,
						NodePort: &hyperv1.NodePortPublishingStrategy{Address: "127.0.0.1", Port: 30443},
					},
				}},
				PullSecret: hyperv1.LocalObjectReference{Name: "pull-secret"},
				Etcd:       hyperv1.EtcdSpec{ManagementType: hyperv1.Managed},
			},
		},
		Release: &releaseinfo.ReleaseImage{
			PullSpec: ReleaseImage,
			Version:  "4.17.0",
			ComponentImages: map[string]string{
				"etcd":       "registry.example.com/ocp/etcd@sha256:" + strings.Repeat("e0", 32),
				"hyperkube":  "registry.example.com/ocp/hyperkube@sha256:" + strings.Repeat("a0", 32),
				"hypershift": "registry.example.com/ocp/hypershift@sha256:" + strings.Repeat("b0", 32),
			},
		},
		ClusterIPs: map[string]string{
			"etcd-client": "10.96.0.10", "etcd-0": "10.96.0.11", "etcd-1": "10.96.0.12", "etcd-2": "10.96.0.13",
			"kube-apiserver": "10.96.0.20",
		},
		SecretHashes: hashes,
	}
}

// Golden renders c for every policy and compares each object with
// testdata/<policy>/<kind>-<name>.yaml (UPDATE=true rewrites them). A
// golden file nothing renders any more fails the test.
func Golden(t *testing.T, c component.Component) {
	t.Helper()
	for _, p := range Policies {
		t.Run(string(p), func(t *testing.T) {
			dir := strings.ToLower(string(p))
			var rendered []string
			for _, obj := range Render(t, c, Inputs(p)) {
				name := strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind) + "-" + obj.GetName()
				testutil.CompareWithGolden(t, dir+"/"+name, obj)
				rendered = append(rendered, name+".yaml")
			}
			entries, err := os.ReadDir(filepath.Join("testdata", dir))
			if err != nil {
				t.Fatal(err)
			}
			var golden []string
			for _, e := range entries {
				golden = append(golden, e.Name())
			}
			sort.Strings(rendered)
			if diff := cmp.Diff(golden, rendered); diff != "" {
				t.Errorf("golden files and rendered objects differ (-golden +rendered):\n%s", diff)
			}
		})
	}
}

// Render returns everything c renders from in: its Services, its workload
// and the workload's extras.
func Render(t *testing.T, c component.Component, in component.Inputs) []client.Object {
	t.Helper()
	var objects []client.Object
	for _, svc := range c.Services(in.HostedControlPlane) {
		objects = append(objects, svc)
	}
	w, err := c.Workload(in)
	if err != nil {
		t.Fatalf("%s: Workload: %v", c.Name(), err)
	}
	return append(append(objects, w.Object), w.Extras...)
}

// Restricted fails the test unless every policy's pods of c meet Pod
// Security "restricted".
func Restricted(t *testing.T, c component.Component) {
	t.Helper()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	for _, p := range Policies {
		w, err := c.Workload(Inputs(p))
		if err != nil {
			t.Fatal(err)
		}
		tmpl := PodTemplate(t, w.Object)
		if agg := policy.AggregateCheckResults(evaluator.EvaluatePod(restricted, &tmpl.ObjectMeta, &tmpl.Spec)); !agg.Allowed {
			t.Errorf("%s (%s) violates Pod Security restricted: %s: %s", c.Name(), p, agg.ForbiddenReason(), agg.ForbiddenDetail())
		}
	}
}

// PodTemplate returns a workload's pod template.
func PodTemplate(t *testing.T, workload client.Object) *corev1.PodTemplateSpec {
	t.Helper()
	switch w := workload.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template
	case *appsv1.StatefulSet:
		return &w.Spec.Template
	}
	t.Fatalf("workload %T is neither a Deployment nor a StatefulSet", workload)
	return nil
}
