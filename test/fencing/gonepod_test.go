package fencing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/leasearbiter"
	"github.com/hypershift-le/hypershift/hypershift-operator/render"
)

// The facts that make the parent's release of a gone pod's Lease safe (see
// the support/leaderelection package documentation), shown with real
// pod-bound tokens: what a process of a deleted or failed pod can still do.

// podToken is a control-plane-operator pod with a real token bound to it.
type podToken struct {
	pod    *corev1.Pod
	client kubernetes.Interface
}

// tokenPod creates pod name with the CPO's ServiceAccount in ns and a
// TokenRequest bound to it, as the kubelet gets for the pod's process.
func tokenPod(t *testing.T, ns, name string) *podToken {
	t.Helper()
	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName: hyperv1.ControlPlaneOperatorName,
			Containers:         []corev1.Container{{Name: hyperv1.ControlPlaneOperatorName, Image: "example.com/hypershift:4.17.0"}},
		},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(3600)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	token, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, hyperv1.ControlPlaneOperatorName, request, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: env.Config.Host, BearerToken: token.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &podToken{pod: pod, client: c}
}

// whoAmI asks the API server who the token is: nil while it authenticates.
func (p *podToken) whoAmI(ctx context.Context) (*authenticationv1.SelfSubjectReview, error) {
	return p.client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
}

// write creates a Service in the pod's namespace, as a control-plane-operator does.
func (p *podToken) write(ctx context.Context) error {
	_, err := p.client.CoreV1().Services(p.pod.Namespace).Create(ctx, service(p.pod.Namespace, fmt.Sprintf("gone-%d", time.Now().UnixNano())), metav1.CreateOptions{})
	return err
}

func (p *podToken) forceDelete(t *testing.T) time.Time {
	t.Helper()
	if err := env.Client.Delete(t.Context(), p.pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// TestADeletedPodsTokenStopsAuthenticating: the token keeps authenticating
// for a few seconds after its pod is force-deleted (the API server caches
// successful authentications), then is refused with 401 for good, within
// the window the parent waits without a fence.
func TestADeletedPodsTokenStopsAuthenticating(t *testing.T) {
	ns := controlPlane(t, ptr.To("cpo-other"))
	p := tokenPod(t, ns, "cpo-gone")
	review, err := p.whoAmI(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if pods := review.Status.UserInfo.Extra[render.PodNameExtra]; len(pods) != 1 || pods[0] != "cpo-gone" {
		t.Fatalf("the token is not bound to the pod: %+v", review.Status.UserInfo)
	}
	deleted := p.forceDelete(t)
	var lastAccepted, firstRefused time.Duration
	for time.Since(deleted) < leasearbiter.TokenWindow+5*time.Second {
		_, err := p.whoAmI(t.Context())
		at := time.Since(deleted)
		switch {
		case err == nil && firstRefused > 0:
			t.Fatalf("the token was refused %s after the deletion, then accepted again at %s", firstRefused, at)
		case err == nil:
			lastAccepted = at
		case apierrors.IsUnauthorized(err) && firstRefused == 0:
			firstRefused = at
		case !apierrors.IsUnauthorized(err):
			t.Fatalf("unexpected error %v", err)
		}
		if firstRefused > 0 && at > firstRefused+2*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the deleted pod's token was accepted until %s after the deletion, refused with 401 from %s",
		lastAccepted.Round(time.Millisecond), firstRefused.Round(time.Millisecond))
	if lastAccepted == 0 {
		t.Error("the token was refused at once: the window this test shows does not exist here")
	}
	if firstRefused == 0 || firstRefused >= leasearbiter.TokenWindow {
		t.Errorf("the token was still accepted %s after the deletion: not refused within the token window %s", lastAccepted, leasearbiter.TokenWindow)
	}
}

// TestInsideTheWindowTheFenceRefusesAGonePod: while a deleted pod's token
// still authenticates, and for a pod in a terminal phase, whose token
// authenticates for as long as the pod object exists, the fence refuses
// the pod's writes once the Lease names another pod. Without the fence
// (the negative control), the deleted pod's write goes through.
func TestInsideTheWindowTheFenceRefusesAGonePod(t *testing.T) {
	fencedNS := controlPlane(t, ptr.To("cpo-new"))
	// The fence is in force before the pods go (policies compile
	// asynchronously, and the window is short).
	_ = denied(t, asPod(t, fencedNS, "cpo-probe"), fencedNS) // the denial itself; denied fails the test if none comes
	unfencedNS := controlPlane(t, ptr.To("cpo-new"))
	unfence(t, unfencedNS)
	if err := awaitSuccess(t, func() error {
		return asPod(t, unfencedNS, "cpo-probe").Create(t.Context(), service(unfencedNS, "probe"))
	}); err != nil {
		t.Fatalf("writes are still fenced once the namespace is no longer selected: %v", err)
	}

	t.Run("a deleted pod whose token still authenticates is fenced", func(t *testing.T) {
		p := tokenPod(t, fencedNS, "cpo-deleted")
		if _, err := p.whoAmI(t.Context()); err != nil { // its process was using it
			t.Fatal(err)
		}
		deleted := p.forceDelete(t)
		err := p.write(t.Context())
		at := time.Since(deleted)
		if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), render.FencingMessageMarker+" cpo-deleted does not hold") {
			t.Fatalf("%s after the deletion the write got %v, want the fence's refusal", at, err)
		}
		t.Logf("%s after the deletion the token still authenticated, and the fence refused the write: %v", at.Round(time.Millisecond), err)
	})
	t.Run("a failed pod, whose token keeps authenticating, is fenced", func(t *testing.T) {
		p := tokenPod(t, fencedNS, "cpo-failed")
		p.pod.Status.Phase = corev1.PodFailed
		if err := env.Client.Status().Update(t.Context(), p.pod); err != nil {
			t.Fatal(err)
		}
		if _, err := p.whoAmI(t.Context()); err != nil {
			t.Fatalf("the failed pod's token does not authenticate: %v", err)
		}
		if err := p.write(t.Context()); err == nil || !strings.Contains(err.Error(), render.FencingMessageMarker+" cpo-failed does not hold") {
			t.Fatalf("the failed pod's write got %v, want the fence's refusal", err)
		}
	})
	t.Run("without the fence, a deleted pod writes inside the window", func(t *testing.T) {
		p := tokenPod(t, unfencedNS, "cpo-deleted")
		if _, err := p.whoAmI(t.Context()); err != nil {
			t.Fatal(err)
		}
		deleted := p.forceDelete(t)
		if err := p.write(t.Context()); err != nil {
			t.Fatalf("%s after the deletion the unfenced write got %v, want it accepted (the window the parent must wait out)", time.Since(deleted), err)
		}
	})
}
