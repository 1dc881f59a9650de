package nodeagent_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func createObject(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("failed to create %T %s: %v", obj, obj.GetName(), err)
	}
}

// volumeDir is where the agent materializes a volume of a running pod.
func volumeDir(t *testing.T, ns, pod, volume string) string {
	t.Helper()
	p, err := getPod(t, ns, pod)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(stateDir, "pods", fmt.Sprintf("%s_%s_%s", ns, pod, p.UID), "volumes", volume)
}

// TestVolumes: every supported volume type, with items, modes and
// subPath, reaches the process at its mount path, through the path
// rewrite of command, args and env.
func TestVolumes(t *testing.T) {
	ns := env.Namespace(t)
	createObject(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{"password": []byte("s3cret"), "unused": []byte("x")}})
	createObject(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"},
		Data: map[string]string{"greeting": "hello", "farewell": "bye"}, BinaryData: map[string][]byte{"blob": {0, 1, 2}}})
	script := `set -e
cat /etc/creds/pw; echo
cat /etc/settings/greeting /etc/settings/blob | od -An -c | tr -s ' '
cat "$GREETING_FILE"; echo
cat /etc/only-farewell; echo
cat /etc/info/labels; echo
cat /etc/projected/ns /etc/projected/pw; echo
echo data > /scratch/file; cat /scratch/file
stat -c '%a' /etc/creds/..data/pw /etc/settings/..data/greeting
echo done; sleep 1000`
	c := shellContainer("main", script)
	c.Env = []corev1.EnvVar{{Name: "GREETING_FILE", Value: "/etc/settings/greeting"}}
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "creds", MountPath: "/etc/creds"},
		{Name: "settings", MountPath: "/etc/settings"},
		{Name: "settings", MountPath: "/etc/only-farewell", SubPath: "farewell"},
		{Name: "info", MountPath: "/etc/info"},
		{Name: "projected", MountPath: "/etc/projected"},
		{Name: "scratch", MountPath: "/scratch"},
	}
	createPod(t, ns, "mounted", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "mounted", "tier": "test"}
		p.Spec.Volumes = []corev1.Volume{
			{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: "creds", Items: []corev1.KeyToPath{{Key: "password", Path: "pw"}}, DefaultMode: ptr.To(int32(0o400)),
			}}},
			{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"},
				Items:                []corev1.KeyToPath{{Key: "greeting", Path: "greeting", Mode: ptr.To(int32(0o640))}, {Key: "farewell", Path: "farewell"}, {Key: "blob", Path: "blob"}},
			}}},
			{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
			}}},
			{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Items: []corev1.KeyToPath{{Key: "password", Path: "pw"}}}},
			}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}
	}, c)
	eventually(t, 30*time.Second, "the script done", func() error {
		if out := logFile(ns, "mounted", "main"); !strings.Contains(out, "done\n") {
			return fmt.Errorf("log so far:\n%s", out)
		}
		return nil
	})
	want := strings.Join([]string{
		"s3cret",
		" h e l l o \\0 001 002",
		"hello",
		"bye",
		"app=\"mounted\"\ntier=\"test\"",
		ns + "s3cret",
		"data",
		"400\n640",
		"done",
	}, "\n")
	if out := logFile(ns, "mounted", "main"); !strings.Contains(out, want) {
		t.Errorf("the process read\n%s\nwant\n%s", out, want)
	}
	if _, err := os.Stat(filepath.Join(volumeDir(t, ns, "mounted", "creds"), "unused")); !os.IsNotExist(err) {
		t.Errorf("a key left out of items was projected: %v", err)
	}
}

// TestSecretUpdatesAreAtomic: while a Secret changes, a reader of its
// volume always finds the file, whole and of one version, and the volume
// ends on the last version.
func TestSecretUpdatesAreAtomic(t *testing.T) {
	ns := env.Namespace(t)
	// Near the API's 1 MiB limit: writing it takes a while.
	const size = 900 << 10
	version := func(n int) map[string][]byte {
		return map[string][]byte{"big": bytes.Repeat([]byte{byte('a' + n)}, size), "version": {byte('a' + n)}}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rotating"}, Data: version(0)}
	createObject(t, secret)
	c := shellContainer("main", "sleep 1000")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "rotating", MountPath: "/etc/rotating"}}
	createPod(t, ns, "reader", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "rotating", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "rotating"}}}}
	}, c)
	waitRunningReady(t, ns, "reader")
	dir := volumeDir(t, ns, "reader", "rotating")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads, torn int
	var lastErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			big, err := os.ReadFile(filepath.Join(dir, "big"))
			reads++
			if err != nil {
				torn, lastErr = torn+1, fmt.Errorf("read failed: %w", err)
				continue
			}
			if len(big) != size || bytes.Count(big, big[:1]) != size {
				torn, lastErr = torn+1, fmt.Errorf("a half-written file: %d bytes", len(big))
			}
		}
	})
	for n := 1; n <= 8; n++ {
		secret.Data = version(n)
		if err := env.Client.Update(t.Context(), secret); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, fmt.Sprintf("version %d in the volume", n), func() error {
			got, err := os.ReadFile(filepath.Join(dir, "big"))
			if err != nil {
				return err
			}
			if len(got) == 0 || got[0] != byte('a'+n) {
				return fmt.Errorf("the volume still holds another version (%d bytes)", len(got))
			}
			return nil
		})
	}
	close(stop)
	wg.Wait()
	if torn > 0 || reads < 10 {
		t.Errorf("%d of %d reads saw a torn volume (last: %v)", torn, reads, lastErr)
	}
	link, err := os.Readlink(filepath.Join(dir, "big"))
	if err != nil || link != "..data/big" {
		t.Errorf("big should link through ..data: %q %v", link, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("the volume holds %d entries, want big, version, ..data and one version directory: %v", len(entries), entries)
	}
}

// TestVolumesThatCannotBeSetUp: an unsupported volume type and a missing
// Secret keep the containers waiting, with a reason and a message naming
// the problem; an optional missing Secret is an empty volume.
func TestVolumesThatCannotBeSetUp(t *testing.T) {
	ns := env.Namespace(t)
	for name, vol := range map[string]corev1.VolumeSource{
		"host-path":      {HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}},
		"missing-secret": {Secret: &corev1.SecretVolumeSource{SecretName: "nowhere"}},
	} {
		c := shellContainer("main", "sleep 1000")
		c.VolumeMounts = []corev1.VolumeMount{{Name: "vol", MountPath: "/mnt"}}
		createPod(t, ns, name, func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "vol", VolumeSource: vol}} }, c)
	}
	c := shellContainer("main", "ls /mnt; echo listed; sleep 1000")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "vol", MountPath: "/mnt"}}
	createPod(t, ns, "optional", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "vol", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nowhere", Optional: ptr.To(true)}}}}
	}, c)
	for name, want := range map[string]string{
		"host-path":      `MountVolume.SetUp failed for volume "vol": volume type hostPath is not supported by the node agent`,
		"missing-secret": `MountVolume.SetUp failed for volume "vol": secret "nowhere" not found`,
	} {
		eventually(t, 30*time.Second, "pod "+name+" waiting on its volume", func() error {
			pod, err := getPod(t, ns, name)
			if err != nil {
				return err
			}
			cs := pod.Status.ContainerStatuses
			if pod.Status.Phase != corev1.PodPending || len(cs) != 1 || cs[0].State.Waiting == nil ||
				cs[0].State.Waiting.Reason != "FailedMount" || cs[0].State.Waiting.Message != want {
				return fmt.Errorf("phase %s, containers %+v", pod.Status.Phase, cs)
			}
			return nil
		})
	}
	waitRunningReady(t, ns, "optional")
	// Once the Secret exists, the waiting pod starts.
	createObject(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nowhere"}, Data: map[string][]byte{"k": []byte("v")}})
	waitRunningReady(t, ns, "missing-secret")
}
