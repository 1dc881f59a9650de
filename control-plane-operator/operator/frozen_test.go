package operator_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hypershift-le/hypershift/test/auditlog"
	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

// TestFrozenLeaderResumesDeposed freezes the leader (SIGSTOP) right after
// asking it to reconcile, lets the standby take over, and resumes it: the
// old leader exits non-zero, names the new holder, never claims it released
// the Lease, and none of its writes lands outside its holding. With SIGTERM
// delivered while it is frozen (what a kubelet does when its liveness probe
// fails), the graceful path finds the Lease taken and is a loss too.
func TestFrozenLeaderResumesDeposed(t *testing.T) {
	for _, tt := range []struct {
		name    string
		signals []syscall.Signal
	}{
		{name: "when it is only resumed, it exits non-zero", signals: []syscall.Signal{syscall.SIGCONT}},
		{name: "when it is stopped while frozen and then resumed, it exits non-zero", signals: []syscall.Signal{syscall.SIGTERM, syscall.SIGCONT}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cp := newControlPlane(t, false)
			a := startCPO(t, cp, "cpo-a", cp.releaseImage)
			awaitHolder(t, cp, 30*time.Second, "cpo-a")
			b := startCPO(t, cp, "cpo-b", cp.releaseImage)
			awaitComponents(t, cp)
			time.Sleep(time.Second) // b is a running standby

			toggle(t, cp)
			if err := a.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			frozen := time.Now()
			awaitHolder(t, cp, leaseDuration+retryPeriod+margin, b.Pod)
			t.Logf("cpo-b took over %s after cpo-a froze", time.Since(frozen).Round(time.Millisecond))
			for _, signal := range tt.signals {
				if err := a.Signal(signal); err != nil {
					t.Fatal(err)
				}
			}
			if !a.Exited(10 * time.Second) {
				t.Fatalf("the resumed leader did not exit within 10s; log:\n%s", operatorprocess.Tail(a.Output(), 2000))
			}
			log := a.Output()
			if a.ExitErr() == nil {
				t.Fatalf("the deposed leader exited 0; log:\n%s", operatorprocess.Tail(log, 3000))
			}
			if !strings.Contains(log, `held by \"cpo-b\"`) && !strings.Contains(log, `held by "cpo-b"`) {
				t.Errorf("the deposed leader did not name the holder cpo-b; log:\n%s", operatorprocess.Tail(log, 3000))
			}
			if strings.Contains(log, "Released the Lease") {
				t.Errorf("the deposed leader claims it released the Lease; log:\n%s", operatorprocess.Tail(log, 3000))
			}
			if v := auditlog.OutsideHoldings(successfulWrites(t, cp.namespace, a.user, b.user), auditlog.ByUser); len(v) != 0 {
				t.Fatalf("writes outside their writer's holding: %v", v)
			}
		})
	}
}
