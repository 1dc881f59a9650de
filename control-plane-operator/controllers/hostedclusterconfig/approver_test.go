package hostedclusterconfig

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/control-plane-operator/pki"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestServingApprover runs the approver against the test's API server,
// standing in for the hosted one: a node's request for its own addresses
// is approved, one for an address its Node does not report is denied with
// the reason, and a request for a Node not registered yet waits for it.
func TestServingApprover(t *testing.T) {
	ns := env.Namespace(t)
	path, err := env.AddUserKubeconfig("serving-approver", pki.MastersGroup)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pki.HostedClusterConfigKubeconfigSecret},
		Data:       map[string][]byte{pki.KubeconfigKey: kubeconfig},
	}); err != nil {
		t.Fatal(err)
	}
	crb := binding("test:serving-approver-nodes", "system:node-bootstrapper", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"})
	if err := env.Client.Create(t.Context(), crb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crb) })
	joiners := binding("test:serving-approver-joiners", "system:node-bootstrapper", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: hyperv1.NodeBootstrapGroup})
	if err := env.Client.Create(t.Context(), joiners); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), joiners) })

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	// No resync within the test: what a request waits for (its Node's
	// registration, its adoption) must wake it.
	go func() { done <- (&ServingApprover{Namespace: ns, Client: env.Client, Resync: time.Hour}).Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	// Node a is a pool's already; node c joins with a pool's token and is
	// adopted; node d, whose kubelet got its credential otherwise, is no
	// pool's: its request waits.
	registerNode(t, "approver-node-a", "198.18.0.201", "workers")
	approved := requestServing(t, "approver-node-a", "198.18.0.201")
	denied := requestServing(t, "approver-node-a", "198.18.0.202")
	early := requestServing(t, "approver-node-b", "198.18.0.203")
	awaitDecision(t, approved, certificatesv1.CertificateApproved, ServingApprovedReason)
	awaitDecision(t, denied, certificatesv1.CertificateDenied, ServingDeniedReason)

	installPoolToken(t, "c0ffee", "workers")
	joinWithToken(t, "c0ffee", "approver-node-c")
	registerNode(t, "approver-node-c", "198.18.0.204", "")
	registerNode(t, "approver-node-d", "198.18.0.205", "")
	adopted := requestServing(t, "approver-node-c", "198.18.0.204")
	orphan := requestServing(t, "approver-node-d", "198.18.0.205")
	awaitDecision(t, adopted, certificatesv1.CertificateApproved, ServingApprovedReason)
	node := &corev1.Node{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "approver-node-c"}, node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[hyperv1.NodePoolLabel] != "workers" {
		t.Errorf("the node that joined with pool workers' token has labels %v, want %s=workers", node.Labels, hyperv1.NodePoolLabel)
	}

	time.Sleep(2 * time.Second)
	if c := decision(t, early); c != nil {
		t.Fatalf("a request for a Node not registered yet was decided: %+v", c)
	}
	if c := decision(t, orphan); c != nil {
		t.Fatalf("a request of a Node of no NodePool was decided: %+v", c)
	}
	registered := time.Now()
	registerNode(t, "approver-node-b", "198.18.0.203", "workers")
	awaitDecision(t, early, certificatesv1.CertificateApproved, ServingApprovedReason)
	t.Logf("a request waiting for its Node was approved %s after the Node registered", time.Since(registered).Round(time.Millisecond))
}

// installPoolToken installs bootstrap token id of NodePool pool in
// kube-system, as reconcileTokens does.
func installPoolToken(t *testing.T, id, pool string) {
	t.Helper()
	token := bootstrapToken(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{hyperv1.NodePoolLabel: pool}},
		Data:       map[string][]byte{"token-id": []byte(id), "token-secret": []byte("0123456789abcdef"), "expiration": []byte("2099-01-01T00:00:00Z")},
	})
	if err := env.Client.Create(t.Context(), token); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), token) })
}

// joinWithToken makes, as a kubelet with bootstrap token id, the client
// certificate request of node, and approves it as kube-controller-manager
// would.
func joinWithToken(t *testing.T, id, node string) {
	t.Helper()
	user, err := env.AddUser("system:bootstrap:"+id, "system:bootstrappers", hyperv1.NodeBootstrapGroup)
	if err != nil {
		t.Fatal(err)
	}
	clientset, err := kubernetes.NewForConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := clientset.CertificatesV1().CertificateSigningRequests().Create(t.Context(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), csr) })
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: "as kube-controller-manager",
	})
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(t.Context(), csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// registerNode creates Node name reporting address, as its kubelet would,
// labeled as NodePool pool's unless pool is empty.
func registerNode(t *testing.T, name, address, pool string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if pool != "" {
		node.Labels = map[string]string{hyperv1.NodePoolLabel: pool}
	}
	if err := env.Client.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	// A patch, as a kubelet reports its status: the approver may adopt
	// (label) the Node between its creation and this write.
	registered := node.DeepCopy()
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: address}, {Type: corev1.NodeHostName, Address: name}}
	if err := env.Client.Status().Patch(t.Context(), node, client.MergeFrom(registered)); err != nil {
		t.Fatal(err)
	}
}

// requestServing creates, as node's kubelet, a serving certificate request
// for its name and address; it returns the request's name.
func requestServing(t *testing.T, node, address string) string {
	t.Helper()
	user, err := env.AddUser("system:node:"+node, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	clientset, err := kubernetes.NewForConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		DNSNames:    []string{node},
		IPAddresses: []net.IP{net.ParseIP(address)},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := clientset.CertificatesV1().CertificateSigningRequests().Create(t.Context(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeletServingSignerName,
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), csr) })
	return csr.Name
}

// decision is the approval or denial of request name, nil when none yet.
func decision(t *testing.T, name string) *certificatesv1.CertificateSigningRequestCondition {
	t.Helper()
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, csr); err != nil {
		t.Fatal(err)
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return &c
		}
	}
	return nil
}

func awaitDecision(t *testing.T, name string, want certificatesv1.RequestConditionType, reason string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		if c := decision(t, name); c == nil || c.Type != want || c.Reason != reason {
			return fmt.Errorf("request %s: decision %+v, want %s (%s)", name, c, want, reason)
		}
		return nil
	})
}
