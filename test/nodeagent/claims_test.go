package nodeagent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/test/nodeagent"
)

// claim makes a claim of the default StorageClass.
func claim(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// boundVolume waits until the claim is bound and returns its volume.
func boundVolume(t *testing.T, ns, name string) *corev1.PersistentVolume {
	t.Helper()
	pv := &corev1.PersistentVolume{}
	eventually(t, 30*time.Second, "claim "+name+" bound", func() error {
		c := &corev1.PersistentVolumeClaim{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		if c.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("phase %s, annotations %v", c.Status.Phase, c.Annotations)
		}
		return env.Client.Get(t.Context(), client.ObjectKey{Name: c.Spec.VolumeName}, pv)
	})
	return pv
}

// TestClaimsSurviveTheirPodsAndTheAgent: a claim of the default
// StorageClass is provisioned as a directory under the state directory and
// bound by kube-controller-manager; its data stays through a restart of
// the agent (as does the pod's emptyDir), and goes with the claim.
func TestClaimsSurviveTheirPodsAndTheAgent(t *testing.T) {
	ns := env.Namespace(t)
	createObject(t, claim(ns, "data"))
	pv := boundVolume(t, ns, "data")
	if pv.Spec.StorageClassName != nodeagent.LocalPathStorageClass || pv.Spec.HostPath == nil ||
		!strings.HasPrefix(pv.Spec.HostPath.Path, filepath.Join(stateDir, "volumes")+"/") {
		t.Fatalf("volume %s: class %q, source %+v", pv.Name, pv.Spec.StorageClassName, pv.Spec.PersistentVolumeSource)
	}
	c := shellContainer("main", `check() {
  if [ -e "$2/born" ]; then echo "$1 kept $(cat "$2/born")"; else echo "$POD_IP" > "$2/born"; echo "$1 new"; fi
}
check data /data; check scratch /scratch; sleep 1000`)
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "scratch", MountPath: "/scratch"}}
	createPod(t, ns, "keeper", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}
	}, c)
	pod := waitRunningReady(t, ns, "keeper")
	waitLog(t, ns, "keeper", "data new\nscratch new\n")
	if raw, err := os.ReadFile(filepath.Join(pv.Spec.HostPath.Path, "born")); err != nil || strings.TrimSpace(string(raw)) != pod.Status.PodIP {
		t.Errorf("the claim's directory holds %q, %v", raw, err)
	}

	stopAgent()
	if err := startAgent(); err != nil {
		t.Fatalf("the agent did not start again: %v", err)
	}
	waitLog(t, ns, "keeper", fmt.Sprintf("data kept %[1]s\nscratch kept %[1]s\n", pod.Status.PodIP))

	if err := env.Client.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keeper"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "keeper", 30*time.Second)
	if _, err := os.Stat(filepath.Join(pv.Spec.HostPath.Path, "born")); err != nil {
		t.Errorf("the claim's data went with its pod: %v", err)
	}
	if err := env.Client.Delete(t.Context(), claim(ns, "data")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the released volume deleted", func() error {
		if _, err := os.Stat(pv.Spec.HostPath.Path); !os.IsNotExist(err) {
			return fmt.Errorf("the directory is still there: %w", err)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Name: pv.Name}, &corev1.PersistentVolume{}); err == nil {
			return fmt.Errorf("volume %s is still there", pv.Name)
		}
		return nil
	})
}

// waitLog waits until a container's log holds want.
func waitLog(t *testing.T, ns, pod, want string) {
	t.Helper()
	eventually(t, 30*time.Second, "log of "+pod+" holding "+want, func() error {
		if out := logFile(ns, pod, "main"); !strings.Contains(out, want) {
			return fmt.Errorf("log so far:\n%s", out)
		}
		return nil
	})
}
