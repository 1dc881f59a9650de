package nodeagent_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/test/testenv"
)

// TestControlPlaneOnTheNode runs a control plane of real binaries as pods:
// etcd in a StatefulSet, its data on a claim and its TLS from a Secret
// volume; kube-apiserver in a Deployment, reaching etcd through the etcd
// Service's ClusterIP with verified TLS. A client reaches the
// kube-apiserver through a NodePort and writes a ConfigMap, which is
// still there after the etcd pod is deleted and re-created on its claim.
func TestControlPlaneOnTheNode(t *testing.T) {
	ns := env.Namespace(t)
	ca, err := testenv.NewCA("hosted-ca")
	if err != nil {
		t.Fatal(err)
	}
	etcdService := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-client"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "etcd"},
			Ports:    []corev1.ServicePort{{Name: "etcd-client", Port: 2379, TargetPort: intstr.FromString("client")}},
		},
	}
	createObject(t, etcdService)
	createTLSSecret(t, ca, ns, "etcd-server-tls", "etcd-server", []string{etcdService.Spec.ClusterIP})
	createTLSSecret(t, ca, ns, "etcd-client-tls", "kube-apiserver-etcd-client", nil)
	createTLSSecret(t, ca, ns, "kas-server-tls", "kube-apiserver", []string{"127.0.0.1", "localhost"})
	signer, public, err := testenv.NewServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	createObject(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sa-signer"},
		Data: map[string][]byte{"sa.key": signer, "sa.pub": public}})
	createObject(t, etcdStatefulSet(ns))
	createObject(t, kubeAPIServerDeployment(ns))
	kas := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kube-apiserver"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: map[string]string{"app": "kube-apiserver"},
			Ports:    []corev1.ServicePort{{Name: "https", Port: 6443, TargetPort: intstr.FromInt32(6443)}},
		},
	}
	createObject(t, kas)

	hosted := hostedClient(t, ca, kas.Spec.Ports[0].NodePort)
	eventually(t, 3*time.Minute, "the hosted kube-apiserver answering through its NodePort", func() error {
		_, err := hosted.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
		return err
	})
	version, err := hosted.Discovery().ServerVersion()
	if err != nil || version.GitVersion != "v1.37.2" || version.Major != "1" || version.Minor != "37" {
		t.Errorf("the hosted kube-apiserver reports version %+v, %v; want v1.37.2", version, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"answer": "42"}}
	if _, err := hosted.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("failed to write a ConfigMap through the hosted kube-apiserver: %v", err)
	}
	claimDir := etcdClaimDir(t, ns)
	if _, err := os.Stat(filepath.Join(claimDir, "data", "member")); err != nil {
		t.Errorf("etcd's data is not on its claim: %v", err)
	}

	old, err := getPod(t, ns, "etcd-0")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "etcd-0 re-created and ready", func() error {
		pod, err := getPod(t, ns, "etcd-0")
		if err != nil {
			return err
		}
		if pod.UID == old.UID || !conditionTrue(pod, corev1.PodReady) {
			return fmt.Errorf("uid %s (old %s), conditions %+v", pod.UID, old.UID, pod.Status.Conditions)
		}
		return nil
	})
	eventually(t, time.Minute, "the ConfigMap read back after etcd came back", func() error {
		got, err := hosted.CoreV1().ConfigMaps("default").Get(t.Context(), "kept", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Data["answer"] != "42" {
			return fmt.Errorf("data %v", got.Data)
		}
		return nil
	})
}

// createTLSSecret issues a certificate for hosts and stores it with the CA
// as a kubernetes.io/tls Secret (ca.crt, tls.crt, tls.key).
func createTLSSecret(t *testing.T, ca *testenv.CA, ns, name, commonName string, hosts []string, groups ...string) {
	t.Helper()
	crt, key, err := ca.Issue(commonName, hosts, groups...)
	if err != nil {
		t.Fatal(err)
	}
	createObject(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"ca.crt": ca.CertPEM(), corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key},
	})
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
}

func etcdStatefulSet(ns string) *appsv1.StatefulSet {
	labels := map[string]string{"app": "etcd"}
	c := corev1.Container{
		Name: "etcd", Image: "etcd", Command: []string{"/usr/bin/etcd"},
		Args: []string{
			"--name=$(POD_NAME)", "--data-dir=/var/lib/etcd/data",
			"--listen-client-urls=https://0.0.0.0:2379", "--advertise-client-urls=https://$(POD_IP):2379",
			"--listen-peer-urls=http://$(POD_IP):2380", "--initial-advertise-peer-urls=http://$(POD_IP):2380",
			"--initial-cluster=$(POD_NAME)=http://$(POD_IP):2380", "--listen-metrics-urls=http://0.0.0.0:2381",
			"--cert-file=/etc/etcd/tls/tls.crt", "--key-file=/etc/etcd/tls/tls.key",
			"--trusted-ca-file=/etc/etcd/tls/ca.crt", "--client-cert-auth",
		},
		Env:   []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")}, {Name: "POD_IP", ValueFrom: fieldRef("status.podIP")}},
		Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {Name: "metrics", ContainerPort: 2381}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("metrics")}},
			PeriodSeconds: 1,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}, {Name: "tls", MountPath: "/etc/etcd/tls"}},
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(int32(1)),
			ServiceName: "etcd-client",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{c},
					Volumes:                       []corev1.Volume{secretVolume("tls", "etcd-server-tls")},
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(10)),
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*claim(ns, "data")},
		},
	}
}

func kubeAPIServerDeployment(ns string) *appsv1.Deployment {
	labels := map[string]string{"app": "kube-apiserver"}
	etcd := "https://$(ETCD_CLIENT_SERVICE_HOST):$(ETCD_CLIENT_SERVICE_PORT)"
	c := corev1.Container{
		Name: "kube-apiserver", Image: "hyperkube", Command: []string{"/usr/bin/kube-apiserver"},
		Args: []string{
			"--etcd-servers=" + etcd,
			"--etcd-cafile=/etc/kubernetes/etcd/ca.crt", "--etcd-certfile=/etc/kubernetes/etcd/tls.crt", "--etcd-keyfile=/etc/kubernetes/etcd/tls.key",
			"--bind-address=0.0.0.0", "--secure-port=6443", "--endpoint-reconciler-type=none",
			"--tls-cert-file=/etc/kubernetes/tls/tls.crt", "--tls-private-key-file=/etc/kubernetes/tls/tls.key",
			"--client-ca-file=/etc/kubernetes/tls/ca.crt", "--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=/etc/kubernetes/sa/sa.pub",
			"--service-account-signing-key-file=/etc/kubernetes/sa/sa.key", "--service-cluster-ip-range=10.96.0.0/24",
		},
		Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: 6443}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS}},
			PeriodSeconds: 2,
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "etcd", MountPath: "/etc/kubernetes/etcd"}, {Name: "tls", MountPath: "/etc/kubernetes/tls"}, {Name: "sa", MountPath: "/etc/kubernetes/sa"},
		},
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kube-apiserver"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{c},
					Volumes: []corev1.Volume{
						secretVolume("etcd", "etcd-client-tls"), secretVolume("tls", "kas-server-tls"), secretVolume("sa", "sa-signer"),
					},
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(10)),
				},
			},
		},
	}
}

// hostedClient is a cluster-admin client of the hosted kube-apiserver,
// reaching it on 127.0.0.1:nodePort and verifying it against ca.
func hostedClient(t *testing.T, ca *testenv.CA, nodePort int32) *kubernetes.Clientset {
	t.Helper()
	crt, key, err := ca.Issue("admin", nil, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{
		Host:            "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(int(nodePort))),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM(), CertData: crt, KeyData: key},
		Timeout:         10 * time.Second,
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// etcdClaimDir returns the directory behind etcd-0's claim.
func etcdClaimDir(t *testing.T, ns string) string {
	t.Helper()
	c := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "data-etcd-0"}, c); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: c.Spec.VolumeName}, pv); err != nil || pv.Spec.HostPath == nil {
		t.Fatalf("volume of data-etcd-0: %+v, %v", pv.Spec, err)
	}
	return pv.Spec.HostPath.Path
}
