package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/cmd/etcdbackup"
	"github.com/hypershift-le/hypershift/support/testutil"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// testEtcdBackup: `hypershift create etcd-backup --wait` writes a snapshot
// of demo's etcd to a claim beside the HostedCluster (backUp).
func testEtcdBackup(t *testing.T) {
	// The story before may leave demo's kube-apiserver rolling out: the
	// write is tried until the hosted API takes it.
	h := hosted(t, "demo")
	testutil.Eventually(t, 2*time.Minute, func() error {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "e2e", Name: "kept"}, StringData: map[string]string{"answer": "42"}}
		_, err := h.client.CoreV1().Secrets("e2e").Create(t.Context(), secret, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	backUp(t, "demo", "demo-backup")
}

// backUp: `hypershift create etcd-backup --wait` writes a snapshot of the
// cluster's etcd, taken from one of its members by a Job in the
// control-plane namespace, written by one beside the claim, in containers
// of the project's image, to the claim backups beside the HostedCluster.
// The file on the claim's volume has the size and SHA-256 the status says;
// restored into a fresh etcd, it holds what the hosted cluster's user wrote
// (keepData); the keys that read its Secrets are kept beside it; nothing
// made for the backup is left in either namespace.
func backUp(t *testing.T, cluster, name string) {
	t.Helper()
	ns := controlPlaneNamespace(cluster)
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "backups"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := lc.Env.Client.Create(t.Context(), claim); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	started := time.Now()
	out := execute(t, etcdbackup.NewCreateCommand(), name, "--cluster-name="+cluster, "--claim-name=backups", "-n", "clusters", "--wait", "--timeout=5m")
	t.Logf("hypershift create etcd-backup --wait (%s):\n%s", time.Since(started).Round(time.Millisecond), out)
	backup := &hyperv1.EtcdBackup{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: name}, backup); err != nil {
		t.Fatal(err)
	}
	s := backup.Status.Snapshot
	if s == nil || s.Revision <= 0 || s.SizeBytes <= 0 || len(s.SHA256) != 64 || !strings.HasPrefix(s.Member, "etcd-") {
		t.Fatalf("status.snapshot %+v", s)
	}
	keys := &corev1.Secret{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: s.EncryptionConfigSecret}, keys); err != nil ||
		!strings.Contains(string(keys.Data["config.yaml"]), "aescbc") {
		t.Fatalf("the saved encryption configuration %q: %v", s.EncryptionConfigSecret, err)
	}

	// The file, read where the claim's volume is on its node.
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(claim), claim); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{}
	if err := lc.Env.Client.Get(t.Context(), client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
		t.Fatalf("the claim's volume %q: %v", claim.Spec.VolumeName, err)
	}
	if pv.Spec.Local == nil {
		t.Fatalf("volume %s is not a local volume: %+v", pv.Name, pv.Spec.PersistentVolumeSource)
	}
	file := filepath.Join(pv.Spec.Local.Path, s.FileName)
	sum, size := fileSHA256(t, file)
	if sum != s.SHA256 || size != s.SizeBytes {
		t.Fatalf("%s: sha256 %s, %d bytes; the status says %s, %d bytes", file, sum, size, s.SHA256, s.SizeBytes)
	}
	if key := "/registry/configmaps/e2e/kept"; !snapshotHolds(t, file, key) {
		t.Fatalf("the snapshot restored into a fresh etcd has no %s", key)
	}
	t.Logf("snapshot of %s's revision %d from member %s, %d bytes, restored into a fresh etcd with the hosted cluster's data", cluster, s.Revision, s.Member, s.SizeBytes)

	testutil.Eventually(t, time.Minute, func() error {
		for _, key := range []client.ObjectKey{{Namespace: ns, Name: "etcd-backup-" + name}, {Namespace: "clusters", Name: "etcd-backup-" + name}} {
			if err := lc.Env.Client.Get(t.Context(), key, &batchv1.Job{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("job %s is still there (%w)", key, err)
			}
			key.Name += "-transfer"
			if err := lc.Env.Client.Get(t.Context(), key, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("secret %s is still there (%w)", key, err)
			}
		}
		return nil
	})
}

func fileSHA256(t *testing.T, path string) (string, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// snapshotHolds restores the snapshot at path into a new data directory
// (checking its integrity hash), starts the repository's etcd on it and
// reports whether key is there.
func snapshotHolds(t *testing.T, path, key string) bool {
	t.Helper()
	dir := t.TempDir()
	peer, clientPort := testutil.FreePort(t), testutil.FreePort(t)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	if err := snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                "check",
		OutputDataDir:       filepath.Join(dir, "data"),
		PeerURLs:            []string{peerURL},
		InitialCluster:      "check=" + peerURL,
		InitialClusterToken: "check",
	}); err != nil {
		t.Fatalf("restore %s: %v", path, err)
	}
	root, err := testenv.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	etcd := exec.CommandContext(t.Context(), filepath.Join(root, "bin", "etcd"), "--name=check", "--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL, "--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL, "--initial-cluster=check="+peerURL)
	etcd.Stdout, etcd.Stderr = io.Discard, io.Discard
	if err := etcd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = etcd.Process.Kill(); _ = etcd.Wait() }()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	var found bool
	testutil.Eventually(t, 30*time.Second, func() error {
		resp, err := c.Get(t.Context(), key, clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		found = resp.Count == 1
		return nil
	})
	return found
}
