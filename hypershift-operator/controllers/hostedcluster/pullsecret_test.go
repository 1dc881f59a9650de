package hostedcluster_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// awaitBackoff returns while the next of user's retried reads of Secret
// ns/name is at least margin away: once the latest read came at least gap
// after the one before, and less than that gap minus margin ago (the
// backoff's delays never shrink, so the next read comes at least gap after
// the latest). The audit log shows the reads; reading it takes seconds on a
// busy machine, hence a window this wide rather than "just after a read".
func awaitBackoff(t *testing.T, user, ns, name string, gap, margin time.Duration) {
	t.Helper()
	testutil.Eventually(t, 2*time.Minute, func() error {
		events, err := env.AuditEvents()
		if err != nil {
			return err
		}
		var reads []time.Time
		for _, e := range events {
			if e.User.Username == user && e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Resource == "secrets" &&
				e.ObjectRef.Namespace == ns && e.ObjectRef.Name == name {
				reads = append(reads, e.RequestReceivedTimestamp.Time)
			}
		}
		if n := len(reads); n >= 2 {
			if last := reads[n-1].Sub(reads[n-2]); last >= gap && time.Since(reads[n-1]) < last-margin {
				return nil
			}
		}
		return fmt.Errorf("%d reads, none %s or more after the one before it and less than that minus %s ago", len(reads), gap, margin)
	})
}

// TestPullSecretsAreWatched: a pull secret created after its
// HostedCluster, once the HO's error backoff has grown past several
// seconds, is picked up within seconds; a changed pull secret is copied
// into the control-plane namespace within seconds, with nothing else to
// trigger a reconcile.
func TestPullSecretsAreWatched(t *testing.T) {
	ho := startOperator(t, nil)
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) { hc.Spec.PullSecret.Name = "late-pull-secret" })
	testutil.Eventually(t, converge, func() error {
		cond := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.ValidConfiguration)
		if cond == nil || cond.Reason != "PullSecretUnavailable" {
			return fmt.Errorf("ValidConfiguration = %+v", cond)
		}
		return nil
	})
	// Create the Secret while the backoff's next retry is more than 6s
	// away: only the watch can bring the copy within the 5s below.
	awaitBackoff(t, ho, c.hc.Namespace, "late-pull-secret", 10*time.Second, 6*time.Second)
	late := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.hc.Namespace, Name: "late-pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: c.registry.DockerConfigJSON("user", "first")},
	}
	if err := env.Client.Create(t.Context(), late); err != nil {
		t.Fatal(err)
	}
	copyOf := func() []byte {
		s := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: c.controlPlaneNamespace(), Name: hyperv1.PullSecretName}, s); err != nil {
			return nil
		}
		return s.Data[corev1.DockerConfigJsonKey]
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if got := copyOf(); !bytes.Equal(got, late.Data[corev1.DockerConfigJsonKey]) {
			return fmt.Errorf("the pull secret copy is %q", got)
		}
		return nil
	})

	awaitControlPlane(t, c)
	late.Data[corev1.DockerConfigJsonKey] = c.registry.DockerConfigJSON("user", "second")
	if err := env.Client.Update(t.Context(), late); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if got := copyOf(); !bytes.Equal(got, late.Data[corev1.DockerConfigJsonKey]) {
			return fmt.Errorf("the pull secret copy is still %q", got)
		}
		return nil
	})
}

// TestBlockedAgainIsReportedAgain: a pull secret that is missing, comes,
// and goes missing again is reported again, with the same message.
// (That retries report nothing more is TestWaitingOnTheUserIsReportedOnce's,
// from the log: the event recorder batches repeats of an event.)
func TestBlockedAgainIsReportedAgain(t *testing.T) {
	startOperator(t, nil)
	c := newCluster(t, "4.17.0", func(hc *hyperv1.HostedCluster) { hc.Spec.PullSecret.Name = "flaky-pull-secret" })
	reports := func() (int32, error) {
		list := &eventsv1.EventList{}
		if err := env.Client.List(t.Context(), list, client.InNamespace(c.hc.Namespace)); err != nil {
			return 0, err
		}
		var n int32
		for _, e := range list.Items {
			if e.Regarding.Name == c.hc.Name && e.Reason == hyperv1.PullSecretUnavailableReason {
				n++
				if e.Series != nil {
					n += e.Series.Count - 1
				}
			}
		}
		return n, nil
	}
	awaitReports := func(want int32) {
		t.Helper()
		testutil.Eventually(t, converge, func() error {
			n, err := reports()
			if err != nil {
				return err
			}
			if n != want {
				return fmt.Errorf("%d PullSecretUnavailable reports, want %d", n, want)
			}
			return nil
		})
	}
	awaitReports(1)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.hc.Namespace, Name: "flaky-pull-secret"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: c.registry.DockerConfigJSON("user", "pass")},
	}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, converge, func() error {
		if cond := meta.FindStatusCondition(c.get(t).Status.Conditions, hyperv1.ValidConfiguration); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("ValidConfiguration = %+v", cond)
		}
		return nil
	})
	if err := env.Client.Delete(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	awaitReports(2)
}
