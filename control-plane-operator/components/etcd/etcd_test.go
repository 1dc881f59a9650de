package etcd

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/component/componenttest"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
)

func TestGolden(t *testing.T) { componenttest.Golden(t, Component{}) }

func TestPodsArePodSecurityRestricted(t *testing.T) { componenttest.Restricted(t, Component{}) }

func statefulSet(t *testing.T, in component.Inputs) (*appsv1.StatefulSet, *component.Workload) {
	t.Helper()
	w, err := Component{}.Workload(in)
	if err != nil {
		t.Fatal(err)
	}
	return w.Object.(*appsv1.StatefulSet), w
}

func arg(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

func TestMembersReachEachOtherByNameWithoutClusterDNS(t *testing.T) {
	tests := []struct {
		name        string
		policy      hyperv1.AvailabilityPolicy
		wantCluster string
		wantAliases []corev1.HostAlias
		wantBudget  bool
		// wantElectionTimeout: a lone member elects itself sooner;
		// members of three keep etcd's default ("").
		wantElectionTimeout string
	}{
		{
			name: "when SingleReplica, one member names itself", policy: hyperv1.SingleReplica,
			wantCluster:         "etcd-0=https://etcd-0:2380",
			wantAliases:         []corev1.HostAlias{{IP: "10.96.0.11", Hostnames: []string{"etcd-0"}}},
			wantElectionTimeout: "500",
		},
		{
			name: "when HighlyAvailable, three members resolve to their Services' ClusterIPs and keep a quorum", policy: hyperv1.HighlyAvailable,
			wantCluster: "etcd-0=https://etcd-0:2380,etcd-1=https://etcd-1:2380,etcd-2=https://etcd-2:2380",
			wantAliases: []corev1.HostAlias{
				{IP: "10.96.0.11", Hostnames: []string{"etcd-0"}}, {IP: "10.96.0.12", Hostnames: []string{"etcd-1"}}, {IP: "10.96.0.13", Hostnames: []string{"etcd-2"}},
			},
			wantBudget: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := componenttest.Inputs(tt.policy)
			set, w := statefulSet(t, in)
			args := set.Spec.Template.Spec.Containers[0].Args
			if got := arg(args, "--initial-cluster"); got != tt.wantCluster {
				t.Errorf("--initial-cluster = %q, want %q", got, tt.wantCluster)
			}
			if got := arg(args, "--election-timeout"); got != tt.wantElectionTimeout {
				t.Errorf("--election-timeout = %q, want %q", got, tt.wantElectionTimeout)
			}
			if got := arg(args, "--initial-advertise-peer-urls"); got != "https://$(POD_NAME):2380" {
				t.Errorf("--initial-advertise-peer-urls = %q: each member must advertise its own name", got)
			}
			if diff := cmp.Diff(tt.wantAliases, set.Spec.Template.Spec.HostAliases); diff != "" {
				t.Errorf("hostAliases (-want +got):\n%s", diff)
			}
			if int(*set.Spec.Replicas) != len(tt.wantAliases) || set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
				t.Errorf("replicas %d, pod management %s", *set.Spec.Replicas, set.Spec.PodManagementPolicy)
			}
			if got := len(w.Extras) == 1; got != tt.wantBudget {
				t.Fatalf("PodDisruptionBudget rendered = %v, want %v", got, tt.wantBudget)
			}
			if tt.wantBudget && w.Extras[0].(*policyv1.PodDisruptionBudget).Spec.MinAvailable.IntValue() != 2 {
				t.Errorf("the budget must keep a quorum of 2")
			}
			services := Component{}.Services(in.HostedControlPlane)
			if len(services) != len(tt.wantAliases)+1 || services[0].Name != ClientServiceName {
				t.Fatalf("Services: %d, first %s", len(services), services[0].Name)
			}
			for i, svc := range services[1:] {
				member := tt.wantAliases[i].Hostnames[0]
				if svc.Name != member || svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != member || !svc.Spec.PublishNotReadyAddresses {
					t.Errorf("member Service %s: selector %v, publishNotReadyAddresses %v", svc.Name, svc.Spec.Selector, svc.Spec.PublishNotReadyAddresses)
				}
			}
		})
	}
}

func TestDataLivesOnAClaimAndSurvivesTheStatefulSet(t *testing.T) {
	set, _ := statefulSet(t, componenttest.Inputs(hyperv1.HighlyAvailable))
	if len(set.Spec.VolumeClaimTemplates) != 1 || set.Spec.VolumeClaimTemplates[0].Name != dataVolume {
		t.Fatalf("volumeClaimTemplates = %+v", set.Spec.VolumeClaimTemplates)
	}
	policy := set.Spec.PersistentVolumeClaimRetentionPolicy
	if policy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || policy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("claims must be retained: %+v", policy)
	}
	if dir := arg(set.Spec.Template.Spec.Containers[0].Args, "--data-dir"); !strings.HasPrefix(dir, dataMount+"/") {
		t.Errorf("--data-dir %s is not on the claim mounted at %s", dir, dataMount)
	}
}

func TestWorkloadNeedsEveryMemberAddress(t *testing.T) {
	in := componenttest.Inputs(hyperv1.HighlyAvailable)
	delete(in.ClusterIPs, "etcd-2")
	_, err := Component{}.Workload(in)
	var missing *component.MissingAddressError
	if !errors.As(err, &missing) || missing.Service != "etcd-2" {
		t.Fatalf("error = %v, want a MissingAddressError for etcd-2", err)
	}
}

func TestWorkloadNeedsTheEtcdImage(t *testing.T) {
	in := componenttest.Inputs(hyperv1.SingleReplica)
	delete(in.Release.ComponentImages, ImageTag)
	_, err := Component{}.Workload(in)
	var missing *component.MissingImageError
	if !errors.As(err, &missing) || missing.Tag != "etcd" || missing.Component != Name {
		t.Fatalf("error = %v, want a MissingImageError for the etcd tag", err)
	}
}

func TestPodsRollWhenTheirCertificatesAreReissued(t *testing.T) {
	hash := func(in component.Inputs) string {
		set, _ := statefulSet(t, in)
		return set.Spec.Template.Annotations[component.SecretsHashAnnotation]
	}
	in := componenttest.Inputs(hyperv1.SingleReplica)
	before := hash(in)
	in.SecretHashes[pki.KubeAPIServerSecret] = "changed"
	if hash(in) != before {
		t.Error("a Secret etcd does not mount changed its pods")
	}
	in.SecretHashes[pki.EtcdPeerSecret] = "changed"
	if hash(in) == before {
		t.Error("a re-issued peer certificate did not change the pod template")
	}
}

func TestCertificateNamesCoverEveryAddress(t *testing.T) {
	in := componenttest.Inputs(hyperv1.HighlyAvailable)
	server := ServerNames(in.HostedControlPlane, in.ClusterIPs)
	var ips []string
	for _, ip := range server.IPAddresses {
		ips = append(ips, ip.String())
	}
	if diff := cmp.Diff([]string{"127.0.0.1", "10.96.0.10", "10.96.0.11", "10.96.0.12", "10.96.0.13"}, ips); diff != "" {
		t.Errorf("server IPs (-want +got):\n%s", diff)
	}
	peer := PeerNames(in.HostedControlPlane, in.ClusterIPs)
	for _, want := range []string{"etcd-0", "etcd-1", "etcd-2", "etcd-1.clusters-demo.svc"} {
		found := false
		for _, name := range peer.DNSNames {
			found = found || name == want
		}
		if !found {
			t.Errorf("the peer certificate does not cover %s", want)
		}
	}
}

// TestMembersOfARestoredClusterRestoreOneCluster: with a snapshot to
// restore, every member's pod first runs `etcd-snapshot restore` from the
// served snapshot onto its claim, with its own name and the membership
// and token etcd starts with, so the three members restore one cluster;
// the transfer Secret is optional (a restored member restarts without
// it); without a snapshot there is no init container.
func TestMembersOfARestoredClusterRestoreOneCluster(t *testing.T) {
	in := componenttest.Inputs(hyperv1.HighlyAvailable)
	set, _ := statefulSet(t, in)
	if n := len(set.Spec.Template.Spec.InitContainers); n != 0 {
		t.Fatalf("%d init containers without a snapshot to restore", n)
	}
	in.HostedControlPlane.Spec.Etcd.RestoreFrom = &hyperv1.EtcdRestoreSource{
		EtcdBackup: hyperv1.LocalObjectReference{Name: "nightly"},
	}
	set, _ = statefulSet(t, in)
	pod := set.Spec.Template.Spec
	if len(pod.InitContainers) != 1 {
		t.Fatalf("init containers %+v, want the restore", pod.InitContainers)
	}
	restore, etcd := pod.InitContainers[0].Args, pod.Containers[0].Args
	for _, flag := range []string{"--data-dir", "--name", "--initial-cluster", "--initial-cluster-token", "--initial-advertise-peer-urls"} {
		if arg(restore, flag) == "" || arg(restore, flag) != arg(etcd, flag) {
			t.Errorf("restore %s=%q, etcd starts with %q", flag, arg(restore, flag), arg(etcd, flag))
		}
	}
	if arg(restore, "--url") != "" || arg(restore, "--transfer-dir") == "" {
		t.Errorf("restore --url=%q --transfer-dir=%q: the URL is read from the transfer Secret", arg(restore, "--url"), arg(restore, "--transfer-dir"))
	}
	if pod.InitContainers[0].Image != in.Release.ComponentImages[RestoreImageTag] {
		t.Errorf("restore image %s, want the payload's control-plane-operator", pod.InitContainers[0].Image)
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == hyperv1.EtcdRestoreTransferSecret && (v.Secret.Optional == nil || !*v.Secret.Optional) {
			t.Errorf("the transfer Secret must be optional: %+v", v.Secret)
		}
	}
}
