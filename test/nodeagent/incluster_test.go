package nodeagent_test

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hypershift-le/hypershift/test/nodeagent"
)

// whoamiPod runs podtool whoami once, with the pod's ServiceAccount token
// automounted (the admission plugin adds the kube-api-access volume).
func whoamiPod(t *testing.T, ns, name string, mutate func(*corev1.Pod)) {
	t.Helper()
	createPod(t, ns, name, func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "robot"
		p.Spec.AutomountServiceAccountToken = nil
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		if mutate != nil {
			mutate(p)
		}
	}, corev1.Container{Name: "main", Image: "podtool", Args: []string{"whoami"}})
}

// waitFinished waits until the pod succeeded or failed, and returns its phase.
func waitFinished(t *testing.T, ns, name string) corev1.PodPhase {
	t.Helper()
	var phase corev1.PodPhase
	eventually(t, 60*time.Second, "pod "+name+" finished", func() error {
		pod, err := getPod(t, ns, name)
		if err != nil {
			return err
		}
		phase = pod.Status.Phase
		if phase != corev1.PodSucceeded && phase != corev1.PodFailed {
			return fmt.Errorf("phase %s, containers %+v", phase, pod.Status.ContainerStatuses)
		}
		return nil
	})
	return phase
}

// TestInClusterConfig: a program that loads rest.InClusterConfig()
// unchanged reaches the API server through the `kubernetes` Service's
// ClusterIP and authenticates with a token bound to its pod; it gets no
// kubeconfig, as in any cluster.
func TestInClusterConfig(t *testing.T) {
	ns := env.Namespace(t)
	createServiceAccount(t, ns, "robot")
	whoamiPod(t, ns, "insider", nil)
	if phase := waitFinished(t, ns, "insider"); phase != corev1.PodSucceeded {
		t.Fatalf("whoami ended %s:\n%s", phase, logFile(ns, "insider", "main"))
	}
	out := logFile(ns, "insider", "main")
	for _, want := range []string{
		"user=system:serviceaccount:" + ns + ":robot\n",
		"kubeconfig=\n",
		"authentication.kubernetes.io/pod-name=insider\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("whoami printed no %q:\n%s", want, out)
		}
	}
}

// TestKubeconfigWithoutMountNamespaces: where processes get no mount
// namespace, rest.InClusterConfig cannot find its files, and a pod gets
// a kubeconfig instead, holding a token bound to the pod that dies with it.
func TestKubeconfigWithoutMountNamespaces(t *testing.T) {
	second := startSecondAgent(t, "plain-node", netip.MustParsePrefix("127.4.0.0/16"), func(c *nodeagent.Config) {
		c.NoMountNamespaces = true
	})
	ns := env.Namespace(t)
	createServiceAccount(t, ns, "robot")
	whoamiPod(t, ns, "outsider", second.onNode)
	if phase := waitFinished(t, ns, "outsider"); phase != corev1.PodFailed {
		t.Errorf("rest.InClusterConfig should fail without a mount namespace, the pod ended %s", phase)
	}
	if out := logFile2(second.dir, ns, "outsider", "main"); !strings.Contains(out, "failed to load the in-cluster configuration") {
		t.Errorf("whoami did not fail on the in-cluster configuration:\n%s", out)
	}

	createPod(t, ns, "tokened", func(p *corev1.Pod) {
		second.onNode(p)
		p.Spec.ServiceAccountName = "robot"
		p.Spec.AutomountServiceAccountToken = nil
	}, httpsContainer("server", 8443))
	waitRunningReady(t, ns, "tokened")
	var pid int
	eventually(t, 30*time.Second, "a process for tokened", func() error {
		var ok bool
		if pid, ok = second.PodPID(ns, "tokened", "server"); !ok {
			return errors.New("no process")
		}
		return nil
	})

	path := processEnv(t, pid)["KUBECONFIG"]
	if path == "" {
		t.Fatal("the process has no KUBECONFIG")
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig %s: mode %v, %v", path, info, err)
	}
	kubeconfig, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, auth := range kubeconfig.AuthInfos {
		if auth.Token == "" || len(auth.ClientCertificateData) > 0 || auth.ClientCertificate != "" || len(auth.ClientKeyData) > 0 {
			t.Errorf("user %s of the kubeconfig should hold a token and no certificate", name)
		}
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	clientset, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	review, err := clientset.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview with the pod's token: %v", err)
	}
	user := review.Status.UserInfo
	if want := "system:serviceaccount:" + ns + ":robot"; user.Username != want {
		t.Errorf("the token authenticates %q, want %q", user.Username, want)
	}
	if got := user.Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != "tokened" {
		t.Errorf("the token is not bound to the pod: extra %v", user.Extra)
	}

	// Bound to the pod, the token dies with it.
	if err := env.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tokened"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "tokened", 20*time.Second)
	// The API server caches a token's authentication for 10s.
	eventually(t, 25*time.Second, "the token refused once the pod is gone", func() error {
		_, err := clientset.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("got %w, want Unauthorized", err)
		}
		return nil
	})
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the kubeconfig should go with the pod: %v", err)
	}
}

func logFile2(dir, ns, pod, container string) string {
	return readFile(fmt.Sprintf("%s/logs/%s_%s_%s.log", dir, ns, pod, container))
}
