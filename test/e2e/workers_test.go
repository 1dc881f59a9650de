package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hack/images"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/internal/pods"
	"github.com/hypershift-le/hypershift/test/localcluster"
)

// testNodeJoins joins a real node to hosted cluster demo the way a machine
// of a NodePool of platform None does: with what the pool's join Secret
// holds (a bootstrap kubeconfig with the pool's token, and the hosted
// cluster's CA), nothing else. The hypershift-operator issued the token,
// the control-plane-operator installed it and the bootstrap RBAC in the
// hosted cluster; the
// hosted kube-controller-manager approves and signs the kubelet's client
// certificate, the control-plane-operator its serving certificate; the
// node becomes Ready, runs pods, and kubectl logs reaches it. The token can
// do nothing but join: it may not read the hosted cluster's Secrets.
func testNodeJoins(t *testing.T) {
	h := hosted(t, "demo")
	hc := hostedClient(t, h)
	testutil.Eventually(t, 2*time.Minute, func() error {
		crb := &rbacv1.ClusterRoleBinding{}
		return hc.Get(t.Context(), client.ObjectKey{Name: "hypershift:node-bootstrapper"}, crb)
	})

	// A NodePool of platform None: the operator publishes how its
	// machines join; the machine here is a real node of the local network.
	pool := &hyperv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "demo-workers"},
		Spec: hyperv1.NodePoolSpec{
			ClusterName: "demo",
			Release:     hyperv1.Release{Image: lc.Registry.Releases[localcluster.Versions[0]]},
			Replicas:    ptr.To(int32(1)),
			Platform:    hyperv1.NodePoolPlatform{Type: hyperv1.NonePlatform},
			Management:  hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
		},
	}
	if err := lc.Env.Client.Create(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	join := &corev1.Secret{}
	testutil.Eventually(t, time.Minute, func() error {
		return lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: pool.Namespace, Name: hyperv1.NodePoolJoinSecretName(pool.Name)}, join)
	})
	bootstrap := join.Data[hyperv1.BootstrapKubeconfigKey]
	tokenConfig, err := clientcmd.RESTConfigFromKubeConfig(bootstrap)
	if err != nil {
		t.Fatalf("the join Secret's bootstrap kubeconfig does not load: %v", err)
	}
	id := strings.Split(tokenConfig.BearerToken, ".")[0]
	testutil.Eventually(t, time.Minute, func() error {
		return hc.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}, &corev1.Secret{})
	})

	t.Run("the bootstrap token can do nothing but join", func(t *testing.T) {
		c, err := kubernetes.NewForConfig(tokenConfig)
		if err != nil {
			t.Fatal(err)
		}
		// The API server may still be coming back from the last story's
		// etcd restart: only its answer counts.
		testutil.Eventually(t, time.Minute, func() error {
			_, err := c.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{Limit: 1})
			if err != nil && !apierrors.IsForbidden(err) {
				return fmt.Errorf("the hosted API server does not answer the bootstrap token: %w", err)
			}
			return nil
		})
		if _, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing Secrets with the bootstrap token: %v, want Forbidden", err)
		}
		if _, err := c.CoreV1().Pods(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing pods with the bootstrap token: %v, want Forbidden", err)
		}
	})

	started := time.Now()
	worker, err := lc.JoinNode(t.Context(), localcluster.JoinOptions{
		Name: "demo-worker-0", BootstrapKubeconfig: bootstrap, ClientCA: join.Data[hyperv1.CACertKey], Client: hc,
		KubeletConfig: join.Data[hyperv1.KubeletConfigKey],
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s joined hosted cluster demo and is Ready %s after its start (%s after the join began)",
		worker.Name, worker.Ready.Sub(worker.Started).Round(100*time.Millisecond), time.Since(started).Round(100*time.Millisecond))

	// The control-plane-operator tells the pool's machines by the token
	// they joined with: only then does it approve their serving
	// certificates.
	testutil.Eventually(t, time.Minute, func() error {
		node := &corev1.Node{}
		if err := hc.Get(t.Context(), client.ObjectKey{Name: worker.Name}, node); err != nil {
			return err
		}
		if node.Labels[hyperv1.NodePoolLabel] != pool.Name {
			return fmt.Errorf("node %s has labels %v, want %s=%s", worker.Name, node.Labels, hyperv1.NodePoolLabel, pool.Name)
		}
		return nil
	})

	// The pool counts it: Ready with as many ready nodes as it asks for.
	testutil.Eventually(t, time.Minute, func() error {
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		var summary []string
		ready, healthy := false, false
		for _, c := range pool.Status.Conditions {
			summary = append(summary, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Message))
			ready = ready || (c.Type == hyperv1.Ready && c.Status == metav1.ConditionTrue)
			healthy = healthy || (c.Type == hyperv1.AllNodesHealthy && c.Status == metav1.ConditionTrue)
		}
		if pool.Status.Replicas != 1 || !ready || !healthy || pool.Status.Version != localcluster.Versions[0] {
			return fmt.Errorf("NodePool %s: replicas %d, version %q, %s", pool.Name, pool.Status.Replicas, pool.Status.Version, strings.Join(summary, "; "))
		}
		return nil
	})

	csrs := &certificatesv1.CertificateSigningRequestList{}
	if err := hc.List(t.Context(), csrs); err != nil {
		t.Fatal(err)
	}
	var clientCSR []string
	for _, csr := range csrs.Items {
		if csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && csr.Spec.Username == "system:bootstrap:"+id {
			for _, c := range csr.Status.Conditions {
				clientCSR = append(clientCSR, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
			}
		}
	}
	if !strings.Contains(strings.Join(clientCSR, ","), "Approved=True (AutoApproved)") {
		t.Errorf("the kubelet's client certificate request: %v, want approved by the hosted kube-controller-manager", clientCSR)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "on-the-worker"},
		Spec: corev1.PodSpec{
			NodeName:                     worker.Name,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "pause", Image: lc.Registry.Image("pause", "latest")}},
		},
	}
	if err := hc.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, func() error {
		if err := hc.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s is %s: %+v", pod.Name, pod.Status.Phase, pod.Status.ContainerStatuses)
		}
		return nil
	})
	t.Logf("pod %s runs on %s at %s", pod.Name, worker.Name, pod.Status.PodIP)

	// The hosted kube-apiserver reaches the kubelet for logs: the
	// kubelet's serving certificate was approved by the control-plane-
	// operator's approver and is verified against the hosted root CA; the
	// kube-apiserver's client certificate is authorized by the binding the
	// control-plane-operator installed.
	logs := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "logs-on-the-worker"},
		Spec: corev1.PodSpec{
			NodeName:                     worker.Name,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "etcd", Image: lc.Registry.Image("etcd", localcluster.Versions[0]), Command: []string{"/usr/bin/etcd", "--version"},
			}},
		},
	}
	if err := hc.Create(t.Context(), logs); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, func() error {
		out, err := h.client.CoreV1().Pods(logs.Namespace).GetLogs(logs.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
		if err != nil {
			return fmt.Errorf("logs of %s: %w", logs.Name, err)
		}
		if !strings.Contains(string(out), "etcd Version") {
			return fmt.Errorf("logs of %s: %q", logs.Name, out)
		}
		return nil
	})
	if out := h.kubectl(t, "logs", "-n", logs.Namespace, logs.Name); !strings.Contains(out, "etcd Version") {
		t.Errorf("kubectl logs %s: %q", logs.Name, out)
	}

	t.Run("a Service answers another pod by its DNS name, through the hosted kube-proxy and CoreDNS", func(t *testing.T) {
		testServiceByName(t, h, hc, worker.Name)
	})

	// The pool goes: its token leaves the hosted cluster, and no machine
	// joins with it again.
	if err := lc.Env.Client.Delete(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, func() error {
		err := hc.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}, &corev1.Secret{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return errors.New("the deleted pool's token is still in the hosted cluster")
	})

	// The audit log as witness: every write the NodePool side made in the
	// management cluster (the pool's finalizer and status, its token and
	// join Secret) came from the hypershift-operator's Lease holder.
	var poolWrites []auditlog.Write
	for _, w := range auditlog.Writes(auditEvents(t), auditlog.Query{Users: []string{hoUser}, SucceededOnly: true}) {
		isPool := strings.HasPrefix(w.Resource, "nodepools") && w.Name == pool.Name
		isPoolSecret := w.Resource == "secrets" && (w.Name == hyperv1.NodePoolJoinSecretName(pool.Name) || w.Name == hyperv1.NodePoolTokenSecretName(pool.Name))
		isHOLease := w.Lease() && w.Name == hyperv1.HypershiftOperatorLeaseName
		if isPool || isPoolSecret || isHOLease {
			poolWrites = append(poolWrites, w)
		}
	}
	counted := checkWritesInHolding(t, "NodePool-side", poolWrites)
	t.Logf("%d NodePool-side writes, all by the hypershift-operator's Lease holder", counted)
}

// checkWritesInHolding checks that each write of writes (what: whose they
// are) other than the Lease's own was made by the pod then holding the
// Lease among them, and that there was one at least: an empty check
// proves nothing. It returns how many were checked.
func checkWritesInHolding(t *testing.T, what string, writes []auditlog.Write) int {
	t.Helper()
	var counted int
	for _, w := range writes {
		if !w.Lease() {
			counted++
		}
	}
	if counted == 0 {
		t.Errorf("no %s write in the audit log: the holder check proves nothing", what)
	}
	if v := auditlog.OutsideHoldings(writes, auditlog.ByPod); len(v) != 0 {
		t.Errorf("%s writes outside the Lease holding: %v", what, v)
	}
	return counted
}

// testServiceByName runs, on the hosted cluster's worker node, what the
// control-plane-operator gives every hosted cluster's nodes: kube-proxy
// (the release's image, with its own iptables) and CoreDNS behind the
// kube-dns Service, which the NodePool's kubelet configuration names. A
// Deployment of two servers runs there; a client pod reaches them by
// their Service's name, and kubectl exec runs a command in a server's
// container.
func testServiceByName(t *testing.T, h *hostedCluster, hosted client.Client, node string) {
	testutil.Eventually(t, 3*time.Minute, func() error {
		list := &corev1.PodList{}
		if err := hosted.List(t.Context(), list, client.InNamespace(metav1.NamespaceSystem)); err != nil {
			return err
		}
		var proxy, dns int
		var states []string
		for _, p := range list.Items {
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
			}
			states = append(states, fmt.Sprintf("%s on %s: %s ready=%v %+v", p.Name, p.Spec.NodeName, p.Status.Phase, ready, p.Status.ContainerStatuses))
			switch {
			case !ready:
			case p.Labels["k8s-app"] == "kube-proxy" && p.Spec.NodeName == node:
				proxy++
			case p.Labels["k8s-app"] == "kube-dns":
				dns++
			}
		}
		if proxy != 1 || dns == 0 {
			return fmt.Errorf("kube-proxy ready on %s: %d, CoreDNS ready: %d; kube-system: %s", node, proxy, dns, strings.Join(states, "; "))
		}
		return nil
	})
	echo := pushEcho(t)
	ns := metav1.NamespaceDefault
	// A Deployment of two replicas of a locally built image, scheduled by
	// the hosted kube-scheduler onto the pool's node.
	server := pods.New(ns, "web", "", echo, "/usr/bin/echo", "serve", ":8080")
	server.Spec.AutomountServiceAccountToken = ptr.To(false)
	server.Spec.RestartPolicy = corev1.RestartPolicyAlways
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: server.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: server.Labels}, Spec: server.Spec},
		},
	}
	if err := hosted.Create(t.Context(), web); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Minute, func() error {
		if err := hosted.Get(t.Context(), client.ObjectKeyFromObject(web), web); err != nil {
			return err
		}
		if web.Status.ObservedGeneration < web.Generation || web.Status.AvailableReplicas != 2 {
			return fmt.Errorf("deployment web: %d of 2 replicas available: %+v", web.Status.AvailableReplicas, web.Status.Conditions)
		}
		return nil
	})
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{
			Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP,
		}}},
	}
	if err := hosted.Create(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	caller := pods.New(ns, "web-client", node, echo, "/usr/bin/echo", "connect", "web.default.svc.cluster.local:80")
	caller.Spec.AutomountServiceAccountToken = ptr.To(false)
	caller = pods.Run(t, hosted, caller, corev1.PodSucceeded)
	if log := h.kubectl(t, "logs", "-n", ns, caller.Name); !strings.HasPrefix(log, "echo from web-") {
		t.Errorf("the client's answer through Service web by name: %q, want a server's", log)
	}
	if out := h.kubectl(t, "exec", "-n", ns, "deploy/web", "--", "/usr/bin/echo", "connect", "127.0.0.1:8080"); !strings.HasPrefix(out, "echo from web-") {
		t.Errorf("kubectl exec in a server's container: %q", out)
	}
}

// pushEcho builds the tests' echo program and pushes its image to the
// local cluster's registry; it returns the image's pull spec.
func pushEcho(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+"/", "github.com/hypershift-le/hypershift/test/internal/echo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := lc.Registry.Push(ctx, dir, map[string]images.Spec{"echo:e2e": {Programs: []string{"echo"}, Entrypoint: []string{"/usr/bin/echo"}}}); err != nil {
		t.Fatal(err)
	}
	return lc.Registry.Image("echo", "e2e")
}
