package report

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hypershift-le/hypershift/test/testenv"
)

// Setup prepares a benchmark run on a real API server: the libraries' logs
// discarded, a context that ends on SIGINT or SIGTERM or after timeout (a
// second signal ends the process at once), and kube-apiserver and etcd
// started with the audit log (within 3 minutes). done stops them and the
// signal handling, saying on stderr when they do not stop.
func Setup(timeout time.Duration) (ctx context.Context, env *testenv.Env, done func(), err error) {
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	startCtx, startCancel := context.WithTimeout(ctx, 3*time.Minute)
	env, err = testenv.Start(startCtx, testenv.Options{AuditLog: true})
	startCancel()
	if err != nil {
		cancel()
		stop()
		return nil, nil, nil, fmt.Errorf("the API server did not start: %w", err)
	}
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once
	}()
	return ctx, env, func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "failed to stop the API server and etcd: %v\n", err)
		}
		cancel()
		stop()
	}, nil
}
