package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/cluster"
	"github.com/hypershift-le/hypershift/support/testutil"
)

// testEtcdRestore: a HostedCluster created from an EtcdBackup
// (hypershift create cluster --restore-from-etcd-backup) starts from the
// snapshot: what demo's user wrote before the backup, a Secret among it
// (read with the keys the backup kept), is there. A backup that does not
// exist, and a snapshot file corrupted on its volume, are refused with
// EtcdSnapshotRestored, and no control-plane namespace is created.
func testEtcdRestore(t *testing.T) {
	// A backup that does not exist.
	runCreateCluster(t, "from-nothing", hyperv1.SingleReplica, "--restore-from-etcd-backup=nowhere")
	awaitRestored(t, "from-nothing", hyperv1.EtcdBackupNotFoundReason, "EtcdBackup nowhere not found")
	noNamespace(t, "from-nothing")

	// A real backup whose file is corrupted on its volume afterwards.
	backUp(t, "demo", "demo-corrupted")
	corrupt(t, "demo-corrupted")
	runCreateCluster(t, "from-corrupt", hyperv1.SingleReplica, "--restore-from-etcd-backup=demo-corrupted")
	awaitRestored(t, "from-corrupt", hyperv1.EtcdSnapshotRefusedReason, "The snapshot of EtcdBackup demo-corrupted was refused")
	noNamespace(t, "from-corrupt")
	for _, name := range []string{"from-nothing", "from-corrupt"} {
		execute(t, cluster.NewDestroyCommand(), "cluster", "--name="+name, "--namespace=clusters", "--wait", "--timeout=2m")
	}

	started := time.Now()
	runCreateCluster(t, "restored", hyperv1.SingleReplica, "--restore-from-etcd-backup=demo-backup", "--wait", "--timeout=5m")
	t.Logf("a cluster restored from demo-backup served after %s", time.Since(started).Round(time.Millisecond))
	h := hosted(t, "restored")
	h.awaitData(t, time.Minute)
	if out := h.kubectl(t, "-n", "e2e", "get", "secret", "kept", "-o", "jsonpath={.data.answer}"); out != "NDI=" {
		t.Fatalf("the restored Secret e2e/kept holds %q, want 42 (NDI=)", out)
	}
	awaitRestored(t, "restored", hyperv1.EtcdSnapshotRestoredReason, "restored")
	testutil.Eventually(t, time.Minute, func() error {
		for _, key := range []client.ObjectKey{{Namespace: "clusters", Name: "etcd-restore-restored"}} {
			if err := lc.Env.Client.Get(t.Context(), key, &batchv1.Job{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("job %s is still there (%w)", key, err)
			}
		}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: controlPlaneNamespace("restored"), Name: hyperv1.EtcdRestoreTransferSecret}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the members' transfer Secret is still there (%w)", err)
		}
		return nil
	})
	execute(t, cluster.NewDestroyCommand(), "cluster", "--name=restored", "--namespace=clusters", "--wait", "--timeout=4m")
}

func awaitRestored(t *testing.T, name, reason, message string) {
	t.Helper()
	testutil.Eventually(t, 3*time.Minute, func() error {
		hc := &hyperv1.HostedCluster{}
		if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: name}, hc); err != nil {
			return err
		}
		c := meta.FindStatusCondition(hc.Status.Conditions, hyperv1.EtcdSnapshotRestored)
		if c == nil || c.Reason != reason || !strings.Contains(c.Message, message) {
			return fmt.Errorf("EtcdSnapshotRestored %+v: want %s, %q", c, reason, message)
		}
		return nil
	})
}

func noNamespace(t *testing.T, name string) {
	t.Helper()
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: controlPlaneNamespace(name)}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Fatalf("control-plane namespace of %s: %v, want none", name, err)
	}
}

// corrupt flips a byte in the middle of the backup's file on its volume.
func corrupt(t *testing.T, backup string) {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: "backups"}, claim); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(pv.Spec.Local.Path, hyperv1.EtcdBackupFileName(backup))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
