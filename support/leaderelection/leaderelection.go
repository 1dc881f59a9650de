// Package leaderelection builds the Lease locks the project's operators elect
// with: a coordination.k8s.io/v1 Lease only, an identity that names the pod,
// and a lock client whose requests time out below the renew deadline.
package leaderelection

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hypershift-le/hypershift/support/config"
)

// PodNameEnv is the environment variable (downward API metadata.name) whose
// value becomes the holder identity.
const PodNameEnv = "POD_NAME"

// Identity returns the identity a candidate holds the Lease under: the pod's
// name from $POD_NAME, so that spec.holderIdentity names the pod; outside a
// pod, the host name with a unique suffix.
func Identity() (string, error) {
	if name := os.Getenv(PodNameEnv); name != "" {
		return name, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("failed to get the host name for the leader identity (set %s): %w", PodNameEnv, err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

// NewLeaseLock returns a Lease lock for namespace/name held as identity. Its
// client's requests time out at le.RequestTimeout(), below the renew deadline.
func NewLeaseLock(restConfig *rest.Config, namespace, name, identity string, le config.LeaderElection) (resourcelock.Interface, error) {
	cfg := rest.CopyConfig(restConfig)
	cfg.Timeout = le.RequestTimeout()
	cfg = rest.AddUserAgent(cfg, "leader-election")
	coreClient, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create the lock's client: %w", err)
	}
	coordinationClient, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create the lock's client: %w", err)
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, coreClient, coordinationClient,
		resourcelock.ResourceLockConfig{Identity: identity})
}

// ConfigureManager sets the election options of a controller-runtime
// manager: when enabled, a Lease lock namespace/name held as Identity(),
// released on cancel once the manager's leader-only runnables stopped, with
// le's timings. It returns the identity.
func ConfigureManager(opts *ctrl.Options, restConfig *rest.Config, enabled bool, namespace, name string, le config.LeaderElection) (string, error) {
	identity, err := Identity()
	if err != nil {
		return "", err
	}
	lock, err := NewLeaseLock(restConfig, namespace, name, identity, le)
	if err != nil {
		return "", err
	}
	opts.LeaderElection = enabled
	opts.LeaderElectionID = name
	opts.LeaderElectionNamespace = namespace
	opts.LeaderElectionResourceLockInterface = lock
	opts.LeaderElectionReleaseOnCancel = true
	opts.LeaseDuration = &le.LeaseDuration
	opts.RenewDeadline = &le.RenewDeadline
	opts.RetryPeriod = &le.RetryPeriod
	return identity, nil
}
