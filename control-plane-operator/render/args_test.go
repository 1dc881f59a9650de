package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

func TestArgsDeriveFromTheHostedControlPlane(t *testing.T) {
	in := testInputs(hyperv1.SingleReplica)
	in.HostedControlPlane.Namespace = "team-a-prod"
	in.HostedControlPlane.Spec.Networking = hyperv1.ClusterNetworking{
		ClusterNetwork: []hyperv1.ClusterNetworkEntry{{CIDR: "10.128.0.0/14"}, {CIDR: "fd01::/48"}},
		ServiceNetwork: []hyperv1.ServiceNetworkEntry{{CIDR: "172.30.0.0/16"}, {CIDR: "fd02::/112"}},
	}
	want := map[string][]string{
		Etcd: {"--data-dir=/var/lib/etcd", "--listen-client-urls=https://0.0.0.0:2379", "--advertise-client-urls=https://etcd.team-a-prod.svc:2379", "--listen-metrics-urls=http://0.0.0.0:2381"},
		KubeAPIServer: {"--secure-port=6443", "--cert-dir=/tmp", "--etcd-servers=https://etcd.team-a-prod.svc:2379",
			"--service-cluster-ip-range=172.30.0.0/16,fd02::/112"},
		KubeControllerManager: {"--secure-port=10257", "--cert-dir=/tmp", "--cluster-cidr=10.128.0.0/14,fd01::/48",
			"--service-cluster-ip-range=172.30.0.0/16,fd02::/112"},
		KubeScheduler: {"--secure-port=10259", "--cert-dir=/tmp"},
	}
	for _, c := range mustRender(t, in) {
		container := c.Deployment.Spec.Template.Spec.Containers[0]
		if diff := cmp.Diff(want[c.Name], container.Args); diff != "" {
			t.Errorf("%s: args (-want +got):\n%s", c.Name, diff)
		}
		if len(container.Env) != 1 || container.Env[0].Name != HostedControlPlaneEnv || container.Env[0].Value != "demo" {
			t.Errorf("%s: env = %+v, want only %s=demo", c.Name, container.Env, HostedControlPlaneEnv)
		}
	}
}

func TestClusterAnnotationIsCopiedOnlyWhenPresent(t *testing.T) {
	in := testInputs(hyperv1.SingleReplica)
	in.HostedControlPlane.Annotations = nil
	for _, c := range mustRender(t, in) {
		if c.Deployment.Annotations != nil {
			t.Errorf("%s: Deployment annotations = %v, want none", c.Name, c.Deployment.Annotations)
		}
		if c.Service != nil && c.Service.Annotations != nil {
			t.Errorf("%s: Service annotations = %v, want none", c.Name, c.Service.Annotations)
		}
	}
}

// TestOnlyReplicasImagesAndRolloutChangeWithPolicyAndRelease renders a
// SingleReplica control plane of one release and a HighlyAvailable one of
// another, and finds no other difference.
func TestOnlyReplicasImagesAndRolloutChangeWithPolicyAndRelease(t *testing.T) {
	single := mustRender(t, testInputs(hyperv1.SingleReplica))
	haInputs := testInputs(hyperv1.HighlyAvailable)
	haInputs.Release = testRelease("4.18.0", "1")
	ha := mustRender(t, haInputs)
	ignore := cmp.Options{
		cmpopts.IgnoreFields(appsv1.DeploymentSpec{}, "Replicas"),
		cmpopts.IgnoreFields(appsv1.DeploymentStrategy{}, "RollingUpdate"),
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Image" }, cmp.Ignore()),
	}
	if diff := cmp.Diff(single, ha, ignore); diff != "" {
		t.Errorf("SingleReplica and HighlyAvailable differ beyond replicas, images and the rolling update (-single +ha):\n%s", diff)
	}
	for i := range single {
		s, h := single[i].Deployment, ha[i].Deployment
		if s.Spec.Template.Spec.Containers[0].Image == h.Spec.Template.Spec.Containers[0].Image {
			t.Errorf("%s: the image did not follow the release", single[i].Name)
		}
	}
}

func TestRolloutStrategy(t *testing.T) {
	tests := []struct {
		name      string
		component string
		policy    hyperv1.AvailabilityPolicy
		want      string
	}{
		{name: "etcd is recreated", component: Etcd, policy: hyperv1.HighlyAvailable, want: "Recreate"},
		{name: "when SingleReplica, kube-apiserver rolls with the defaults", component: KubeAPIServer, policy: hyperv1.SingleReplica, want: "RollingUpdate"},
		{name: "when HighlyAvailable, kube-apiserver rolls one replica at a time without surge", component: KubeAPIServer, policy: hyperv1.HighlyAvailable, want: "RollingUpdate 1/0"},
		{name: "when HighlyAvailable, kube-scheduler rolls one replica at a time without surge", component: KubeScheduler, policy: hyperv1.HighlyAvailable, want: "RollingUpdate 1/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := strategy(tt.component, Replicas(tt.component, tt.policy))
			got := string(s.Type)
			if ru := s.RollingUpdate; ru != nil {
				got += " " + ru.MaxUnavailable.String() + "/" + ru.MaxSurge.String()
			}
			if got != tt.want {
				t.Errorf("strategy = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestComponentsDoNotChangeTheirInputs(t *testing.T) {
	in := testInputs(hyperv1.HighlyAvailable)
	hcp, release := in.HostedControlPlane.DeepCopy(), *in.Release
	release.ComponentImages = map[string]string{}
	for k, v := range in.Release.ComponentImages {
		release.ComponentImages[k] = v
	}
	mustRender(t, in)
	if diff := cmp.Diff(hcp, in.HostedControlPlane); diff != "" {
		t.Errorf("the HostedControlPlane changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(&release, in.Release); diff != "" {
		t.Errorf("the release changed (-before +after):\n%s", diff)
	}
}
