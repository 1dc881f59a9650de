package hostedcluster

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

func servingPod(component, name, node string, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{hyperv1.ControlPlaneComponentLabel: component}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func TestCannotServe(t *testing.T) {
	const after = 30 * time.Second
	lostA := map[string]time.Duration{"a": 35 * time.Second}
	lostAB := map[string]time.Duration{"a": 35 * time.Second, "b": 31 * time.Second}
	kas := func(name, node string) corev1.Pod {
		return servingPod(kubeAPIServerComponent, name, node, corev1.PodRunning)
	}
	etcd := func(name, node string) corev1.Pod { return servingPod(etcdComponent, name, node, corev1.PodRunning) }
	deleting := func(p corev1.Pod) corev1.Pod { p.DeletionTimestamp = &metav1.Time{Time: time.Now()}; return p }
	spread := []corev1.Pod{kas("k1", "a"), kas("k2", "b"), kas("k3", "c"), etcd("etcd-0", "a"), etcd("etcd-1", "b"), etcd("etcd-2", "c")}

	for _, tc := range []struct {
		name      string
		pods      []corev1.Pod
		lost      map[string]time.Duration
		want      string
		wantNodes []string
	}{
		{
			name:      "single replica on the lost node",
			pods:      []corev1.Pod{kas("k1", "a"), etcd("etcd-0", "a")},
			lost:      lostA,
			want:      "The hosted control plane cannot serve: its kube-apiserver runs only on node a, and 1 of its 1 etcd members are on node a, so etcd has lost its quorum; the kubelet of node a has not heartbeated for over 30s. It serves again, with its data, when the node returns",
			wantNodes: []string{"a"},
		},
		{
			name:      "single replica, only etcd on the lost node",
			pods:      []corev1.Pod{kas("k1", "b"), etcd("etcd-0", "a")},
			lost:      lostA,
			want:      "The hosted control plane cannot serve: 1 of its 1 etcd members are on node a, so etcd has lost its quorum; the kubelet of node a has not heartbeated for over 30s. It serves again, with its data, when the node returns",
			wantNodes: []string{"a"},
		},
		{
			name: "spread over three nodes, one lost",
			pods: spread,
			lost: lostA,
		},
		{
			name:      "spread over three nodes, two lost",
			pods:      spread,
			lost:      lostAB,
			want:      "The hosted control plane cannot serve: 2 of its 3 etcd members are on nodes a, b, so etcd has lost its quorum; the kubelets of nodes a, b have not heartbeated for over 30s. It serves again, with its data, when the nodes return",
			wantNodes: []string{"a", "b"},
		},
		{
			name:      "the only kube-apiserver elsewhere is being deleted, its replacement not scheduled",
			pods:      []corev1.Pod{kas("k1", "a"), deleting(kas("k2", "b")), servingPod(kubeAPIServerComponent, "k3", "", corev1.PodPending), etcd("etcd-0", "b")},
			lost:      lostA,
			want:      "The hosted control plane cannot serve: its kube-apiserver runs only on node a; the kubelet of node a has not heartbeated for over 30s. It serves again, with its data, when the node returns",
			wantNodes: []string{"a"},
		},
		{
			name: "a replacement kube-apiserver runs elsewhere",
			pods: []corev1.Pod{kas("k1", "a"), kas("k2", "b"), etcd("etcd-0", "b")},
			lost: lostA,
		},
		{
			name: "nothing on the lost node",
			pods: []corev1.Pod{kas("k1", "b"), etcd("etcd-0", "b")},
			lost: lostA,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cannotServe(tc.pods, tc.lost, after)
			if got != tc.want {
				t.Errorf("message\n got %q\nwant %q", got, tc.want)
			}
			for _, node := range tc.wantNodes {
				if !strings.Contains(got, " "+node) {
					t.Errorf("the message does not name node %s: %q", node, got)
				}
			}
		})
	}
}
