package localcluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"

	"github.com/hypershift-le/hypershift/support/testutil"
)

// checkNodeCertificates checks that every node joined by TLS bootstrap: its
// client certificate came from a request of the bootstrap token that
// kube-controller-manager approved, its serving certificate from a request
// of its own that the local cluster approved, and its kubelet serves with
// a certificate the cluster's CA verifies for the node's address; the
// summary API answers through the API server, which verifies it too.
func checkNodeCertificates(t *testing.T, c *Cluster) {
	t.Helper()
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := c.Env.Client.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.Env.Config.CAData)
	clientset, err := kubernetes.NewForConfig(c.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		user := "system:node:" + n.Name
		var client, serving bool
		for _, csr := range list.Items {
			if !approvedAndIssued(&csr) {
				continue
			}
			switch {
			case csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && strings.HasPrefix(csr.Spec.Username, "system:bootstrap:") &&
				requestFor(t, &csr) == user:
				client = true
			case csr.Spec.SignerName == certificatesv1.KubeletServingSignerName && csr.Spec.Username == user:
				serving = true
			}
		}
		if !client || !serving {
			t.Errorf("node %s: approved and issued client certificate request of a bootstrap token %v, serving certificate request of its own %v", n.Name, client, serving)
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(n.Address, "20250"),
			&tls.Config{RootCAs: roots, ServerName: n.Address, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Errorf("node %s: its kubelet's serving certificate does not verify with the cluster's CA for %s: %v", n.Name, n.Address, err)
		} else {
			_ = conn.Close()
		}
		raw, err := clientset.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy/stats/summary").DoRaw(t.Context())
		if err != nil || !bytes.Contains(raw, []byte(`"nodeName": "`+n.Name+`"`)) {
			t.Errorf("node %s: the summary API through the API server: %v, %.200s", n.Name, err, raw)
		}
	}
}

// requestFor is the subject's common name of a request.
func requestFor(t *testing.T, csr *certificatesv1.CertificateSigningRequest) string {
	t.Helper()
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		t.Fatalf("request %s is not PEM", csr.Name)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatalf("request %s: %v", csr.Name, err)
	}
	return req.Subject.CommonName
}

func approvedAndIssued(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			return len(csr.Status.Certificate) > 0
		}
	}
	return false
}

// execAndPortForward runs a command in pod (the echo server) as kubectl
// exec does, and reads its port 8080 through a port forward as kubectl
// port-forward does: both through the API server and the pod's kubelet.
func execAndPortForward(t *testing.T, c *Cluster, pod *corev1.Pod) (exec, port string) {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(c.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req := clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: pod.Spec.Containers[0].Name, Command: []string{"/usr/bin/echo", "append", "/tmp/exec"}, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	executor, err := remotecommand.NewSPDYExecutor(c.Env.Config, http.MethodPost, req.URL())
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := executor.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Errorf("exec: %v (%s)", err, stderr.String())
	}

	transport, upgrader, err := spdy.RoundTripperFor(c.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	url := clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	forwarder, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = forwarder.ForwardPorts() }()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the port forward was not ready within 30s")
	}
	ports, err := forwarder.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("forwarded ports %v: %v", ports, err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local), 2*time.Second)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		answer, err := io.ReadAll(conn)
		port = string(answer)
		return err
	})
	return stdout.String(), port
}
