package nodeagent_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// inRotation is the readiness gate the service tests flip.
const inRotation = corev1.PodConditionType("example.com/in-rotation")

// echoPod runs podtool serve on port 8080 (named http), answering with its
// name, Ready only while the test says it is in rotation.
func echoPod(t *testing.T, ns, name string) {
	t.Helper()
	c := corev1.Container{
		Name: "main", Image: "podtool", Args: []string{"serve", "--listen=:8080"},
		Env:   []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")}},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
	}
	createPod(t, ns, name, func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "echo"}
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: inRotation}}
	}, c)
}

// setInRotation sets a pod's readiness gate condition.
func setInRotation(t *testing.T, ns, name string, in bool) {
	t.Helper()
	pod, err := getPod(t, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.StrategicMergeFrom(pod.DeepCopy())
	status := corev1.ConditionFalse
	if in {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: inRotation, Status: status, LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Patch(t.Context(), pod, patch); err != nil {
		t.Fatal(err)
	}
}

// ask fetches http://addr/ with a fresh connection and returns the body.
func ask(addr string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// answers asks n times and counts the answers by pod name.
func answers(addr string, n int) (map[string]int, error) {
	got := map[string]int{}
	for range n {
		name, err := ask(addr)
		if err != nil {
			return got, err
		}
		got[name]++
	}
	return got, nil
}

// TestServiceProxy: a Service's ClusterIP and NodePort reach its ready
// pods in turn; when a pod goes unready its traffic moves within a second;
// with no ready pod connections are refused at once; a removed Service is
// not served.
func TestServiceProxy(t *testing.T) {
	ns := env.Namespace(t)
	echoPod(t, ns, "left")
	echoPod(t, ns, "right")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "echo"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: map[string]string{"app": "echo"},
			Ports:    []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	createObject(t, svc)
	for _, name := range []string{"left", "right"} {
		setInRotation(t, ns, name, true)
		waitRunningReady(t, ns, name)
	}
	clusterAddr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	nodeAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
	for _, addr := range []string{clusterAddr, nodeAddr} {
		eventually(t, 10*time.Second, "both pods answering on "+addr, func() error {
			got, err := answers(addr, 6)
			if err != nil {
				return err
			}
			if got["left"] == 0 || got["right"] == 0 {
				return fmt.Errorf("answers %v", got)
			}
			return nil
		})
	}

	setInRotation(t, ns, "left", false)
	moved := time.Now()
	eventually(t, 5*time.Second, "traffic away from the unready pod", func() error {
		got, err := answers(clusterAddr, 10)
		if err != nil {
			return err
		}
		if got["right"] != 10 {
			return fmt.Errorf("answers %v", got)
		}
		return nil
	})
	if elapsed := time.Since(moved); elapsed > time.Second {
		t.Errorf("the traffic moved %s after the pod went unready, want within a second", elapsed)
	}

	setInRotation(t, ns, "right", false)
	eventually(t, 5*time.Second, "connections refused with no ready endpoint", func() error {
		return refusedAtOnce(clusterAddr)
	})
	if err := refusedAtOnce(nodeAddr); err != nil {
		t.Error(err)
	}

	setInRotation(t, ns, "right", true)
	eventually(t, 5*time.Second, "the service back", func() error {
		_, err := ask(clusterAddr)
		return err
	})
	if err := env.Client.Delete(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the removed service not served", func() error {
		return refusedAtOnce(clusterAddr)
	})
}

// refusedAtOnce dials addr and wants ECONNREFUSED within 100ms.
func refusedAtOnce(addr string) error {
	start := time.Now()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		_ = conn.Close()
		return fmt.Errorf("%s accepted a connection", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%s: %w, want connection refused", addr, err)
	}
	if elapsed := time.Since(start); elapsed > 100*time.Millisecond {
		return fmt.Errorf("%s refused after %s, want at once", addr, elapsed)
	}
	return nil
}

// TestEndpointSlicesRefuseLoopbackAddresses pins the fact the proxy is
// built around: the API refuses an EndpointSlice naming a pod's loopback
// address, so the endpointslice controller cannot publish this node's pods
// and the agent derives their endpoints itself.
func TestEndpointSlicesRefuseLoopbackAddresses(t *testing.T) {
	ns := env.Namespace(t)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "loopback", Labels: map[string]string{discoveryv1.LabelServiceName: "echo"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podPrefix.Addr().Next().String()}}},
	}
	err := env.Client.Create(t.Context(), slice)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("creating an EndpointSlice with a loopback address: %v, want it refused as invalid", err)
	}
}
