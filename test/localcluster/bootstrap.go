package localcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/support/csrapproval"
)

// How nodes join, as kubeadm's do: the kubelet authenticates with a
// bootstrap token (group system:bootstrappers) and asks for its client
// certificate, which kube-controller-manager approves (RBAC below) and
// signs with the cluster's CA; then, as system:node:<name>, it asks for its
// serving certificate, which approveServing approves by package
// csrapproval's rule and kube-controller-manager signs. The API server
// verifies the kubelets it reaches with that CA.

// bootstrapGroup is the extra group of the local cluster's bootstrap
// tokens.
const bootstrapGroup = "system:bootstrappers:localcluster"

// bootstrapTokenTTL is how long a bootstrap token joins nodes: they all
// join at start; the token cleaner deletes it once it has expired.
const bootstrapTokenTTL = time.Hour

// newBootstrapToken creates a bootstrap token Secret and returns a client
// configuration that authenticates with it.
func (c *Cluster) newBootstrapToken(ctx context.Context, server string) (*rest.Config, error) {
	bearer, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return nil, err
	}
	id, secret, _ := strings.Cut(bearer, ".")
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(id)},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey: id, bootstrapapi.BootstrapTokenSecretKey: secret,
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      bootstrapGroup,
			bootstrapapi.BootstrapTokenExpirationKey:       time.Now().Add(bootstrapTokenTTL).UTC().Format(time.RFC3339),
			bootstrapapi.BootstrapTokenDescriptionKey:      "joins the local cluster's nodes",
		},
	}
	if err := c.Env.Client.Create(ctx, token); err != nil {
		return nil, fmt.Errorf("failed to create the nodes' bootstrap token: %w", err)
	}
	return &rest.Config{Host: server, BearerToken: bearer, TLSClientConfig: rest.TLSClientConfig{CAData: c.Env.Config.CAData}}, nil
}

// bootstrapRoleBindings let bootstrap tokens ask for client certificates
// that kube-controller-manager approves, and nodes renew theirs: the
// bindings kubeadm makes.
func bootstrapRoleBindings() []client.Object {
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: name}
	}
	return []client.Object{
		bindClusterRole("system:node-bootstrapper", group(bootstrapGroup)),
		bindClusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient", group(bootstrapGroup)),
		bindClusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", group("system:nodes")),
	}
}

// approveServing approves, until ctx ends, every pending kubelet-serving
// request that package csrapproval's rule passes for the Node it names,
// and denies the others with the reason; a request for a Node not
// registered yet waits.
func (c *Cluster) approveServing(ctx context.Context) {
	clientset, err := kubernetes.NewForConfig(c.Env.Config)
	if err != nil {
		return
	}
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := clientset.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range list.Items {
			csr := &list.Items[i]
			name := csrapproval.NodeName(csr)
			if name == "" || csrapproval.Decided(csr) {
				continue
			}
			node := &corev1.Node{}
			if err := c.Env.Client.Get(ctx, client.ObjectKey{Name: name}, node); apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return false, nil
			}
			condition := certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
				Reason: "LocalClusterApproved", Message: "the request is for node " + name + "'s own names and addresses",
			}
			if err := csrapproval.KubeletServing(csr, node); err != nil {
				condition.Type, condition.Reason, condition.Message = certificatesv1.CertificateDenied, "LocalClusterDenied", err.Error()
			}
			csr.Status.Conditions = append(csr.Status.Conditions, condition)
			_, _ = clientset.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		}
		return false, nil
	})
}
