package nodeagent_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestEtcdMembersReachEachOtherThroughHostAliases runs a three-member etcd
// whose members know each other only by name (etcd-0, etcd-1, etcd-2),
// each name a hostAlias of the pod template pointing at the member's own
// Service: the members form a quorum, one member's pod is deleted while
// the other two stay ready, and it rejoins on its claim.
func TestEtcdMembersReachEachOtherThroughHostAliases(t *testing.T) {
	ns := env.Namespace(t)
	members := []string{"etcd-0", "etcd-1", "etcd-2"}
	var aliases []corev1.HostAlias
	var cluster []string
	for _, m := range members {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m},
			Spec: corev1.ServiceSpec{
				Selector:                 map[string]string{"statefulset.kubernetes.io/pod-name": m},
				PublishNotReadyAddresses: true,
				Ports:                    []corev1.ServicePort{{Name: "peer", Port: 2380, TargetPort: intstr.FromString("peer")}},
			},
		}
		createObject(t, svc)
		aliases = append(aliases, corev1.HostAlias{IP: svc.Spec.ClusterIP, Hostnames: []string{m}})
		cluster = append(cluster, m+"=http://"+m+":2380")
	}
	createObject(t, etcdMembers(ns, aliases, strings.Join(cluster, ",")))
	for _, m := range members {
		waitRunningReady(t, ns, m)
	}

	old, err := getPod(t, ns, "etcd-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for _, m := range []string{"etcd-0", "etcd-2"} {
			if pod, err := getPod(t, ns, m); err != nil || !conditionTrue(pod, corev1.PodReady) {
				t.Fatalf("member %s lost its readiness while etcd-1 was away (%v)", m, err)
			}
		}
		pod, err := getPod(t, ns, "etcd-1")
		if err == nil && pod.UID != old.UID && conditionTrue(pod, corev1.PodReady) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd-1 did not rejoin within 2m:\n%s", logFile(ns, "etcd-1", "etcd"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if log := logFile(ns, "etcd-0", "etcd"); strings.Contains(log, "no such host") {
		t.Errorf("etcd-0 looked a member's name up instead of using its alias:\n%s", log)
	}
}

// etcdMembers is a StatefulSet of three etcd members that advertise
// http://<pod name>:2380 and find each other through hostAliases.
func etcdMembers(ns string, aliases []corev1.HostAlias, initialCluster string) *appsv1.StatefulSet {
	labels := map[string]string{"app": "etcd"}
	c := corev1.Container{
		Name: "etcd", Image: "etcd", Command: []string{"/usr/bin/etcd"},
		Args: []string{
			"--name=$(POD_NAME)", "--data-dir=/var/lib/etcd/data",
			"--listen-client-urls=http://$(POD_IP):2379", "--advertise-client-urls=http://$(POD_IP):2379",
			"--listen-peer-urls=http://$(POD_IP):2380", "--initial-advertise-peer-urls=http://$(POD_NAME):2380",
			"--initial-cluster=" + initialCluster, "--initial-cluster-state=new", "--initial-cluster-token=" + ns,
			"--listen-metrics-urls=http://$(POD_IP):2381",
		},
		Env:   []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")}, {Name: "POD_IP", ValueFrom: fieldRef("status.podIP")}},
		Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {Name: "peer", ContainerPort: 2380}, {Name: "metrics", ContainerPort: 2381}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("metrics")}},
			PeriodSeconds: 1,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(int32(3)),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{c},
					HostAliases:                   aliases,
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(10)),
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*claim(ns, "data")},
		},
	}
}
