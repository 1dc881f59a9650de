package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// TestWaitingOnTheUserIsReportedOnce creates a HostedCluster whose release
// tag does not exist yet: the HO says so once in its log, at info level,
// with no error log and no stack trace while it retries, and picks the
// release up after it is pushed, within its backoff.
func TestWaitingOnTheUserIsReportedOnce(t *testing.T) {
	hoNamespace := env.Namespace(t)
	ho := startProcess(t, hoNamespace, "ho-waiting", "hypershift-operator-waiting")
	registry := releasetest.NewRegistry(t)
	image := registry.Host() + "/ocp-release:4.17.9"
	hc := newHostedCluster(t, registry, image)
	releaseCondition := func() *metav1.Condition {
		current := &hyperv1.HostedCluster{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(hc), current); err != nil {
			return nil
		}
		return meta.FindStatusCondition(current.Status.Conditions, hyperv1.ValidReleaseImage)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if c := releaseCondition(); c == nil || c.Reason != hyperv1.ReleaseImageNotFoundReason {
			return fmt.Errorf("ValidReleaseImage %+v", c)
		}
		return nil
	})
	// The backoff's first delays are 2s, 4s and 8s: at least three more
	// passes by then.
	time.Sleep(15 * time.Second)
	var reported, errorLogs []string
	stacks := 0
	for line := range strings.Lines(ho.Output()) {
		switch {
		case strings.Contains(line, "ValidReleaseImage is False") && strings.Contains(line, image):
			reported = append(reported, line)
		case strings.Contains(line, "Reconciler error") && strings.Contains(line, image):
			errorLogs = append(errorLogs, line)
		}
		if strings.Contains(line, `"stacktrace"`) {
			stacks++
		}
	}
	if len(reported) != 1 || len(errorLogs) != 0 || stacks != 0 {
		t.Errorf("while waiting on the release: %d info reports (want 1), %d error logs and %d stack traces (want 0):\n%s%s",
			len(reported), len(errorLogs), stacks, strings.Join(reported, ""), strings.Join(errorLogs, ""))
	}

	pushed := time.Now()
	registry.PushRelease(t, "ocp-release:4.17.9", "4.17.9", map[string]string{"hypershift": registry.Host() + "/hypershift:4.17.9"})
	testutil.Eventually(t, 40*time.Second, func() error {
		if c := releaseCondition(); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ValidReleaseImage %+v", c)
		}
		return nil
	})
	t.Logf("the pushed release was picked up %s after the push", time.Since(pushed).Round(time.Second))
}
