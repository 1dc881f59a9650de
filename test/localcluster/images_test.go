package localcluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hypershift-le/hypershift/test/nodeagent"
)

func TestResolve(t *testing.T) {
	r := &Registry{Host: "127.0.0.1:5000", tags: map[string]string{}}
	for tag := range payloadImages {
		r.tags[r.Image(tag, "4.17.0")] = tag
	}
	c := &Cluster{Registry: r, opts: Options{BinDir: "/bin-dir", ImageBinaries: map[string]string{"e2e.local/x:1": "/elsewhere/x"}}}
	for _, tc := range []struct {
		name      string
		image     string
		labels    map[string]string
		command   []string
		args      []string
		wantPath  string
		wantArgv  []string
		wantError string
		pull      bool
	}{
		{name: "the etcd image runs etcd by its path", image: "etcd", command: []string{"/usr/bin/etcd"}, args: []string{"--name=a"},
			wantPath: "/bin-dir/etcd", wantArgv: []string{"--name=a"}},
		{name: "the etcd image runs etcd when given no command", image: "etcd", args: []string{"--name=a"},
			wantPath: "/bin-dir/etcd", wantArgv: []string{"--name=a"}},
		{name: "hyperkube runs a component by its path", image: "hyperkube", command: []string{"/usr/bin/kube-scheduler"}, args: []string{"--v=2"},
			wantPath: "/bin-dir/kube-scheduler", wantArgv: []string{"--v=2"}},
		{name: "hyperkube runs the component its first argument names", image: "hyperkube", command: []string{"/usr/bin/hyperkube", "kube-apiserver"}, args: []string{"--v=2"},
			wantPath: "/bin-dir/kube-apiserver", wantArgv: []string{"--v=2"}},
		{name: "hyperkube by name, component in args", image: "hyperkube", command: []string{"hyperkube"}, args: []string{"kube-controller-manager", "--v=2"},
			wantPath: "/bin-dir/kube-controller-manager", wantArgv: []string{"--v=2"}},
		{name: "the hypershift image runs the operator its command names", image: "hypershift", command: []string{"/usr/bin/control-plane-operator"}, args: []string{"run"},
			wantPath: "/bin-dir/control-plane-operator", wantArgv: []string{"run"}},
		{name: "a hosted control plane's component runs the real program", image: "hyperkube", labels: map[string]string{"hypershift.openshift.io/control-plane-component": "kube-apiserver"},
			command: []string{"/usr/bin/kube-apiserver"}, args: []string{"--secure-port=6443"},
			wantPath: "/bin-dir/kube-apiserver", wantArgv: []string{"--secure-port=6443"}},
		{name: "an image named in ImageBinaries runs that binary", image: "e2e.local/x:1", args: []string{"a"},
			wantPath: "/elsewhere/x", wantArgv: []string{"a"}},
		{name: "an image of no payload is not pulled", image: "quay.io/somewhere/else:1", wantError: "quay.io/somewhere/else:1 is not an image", pull: true},
		{name: "a program the image does not hold", image: "hyperkube", command: []string{"/usr/bin/kube-proxy"}, wantError: "executable file not found"},
		{name: "hyperkube without a component", image: "hyperkube", command: []string{"hyperkube"}, wantError: "needs a component"},
		{name: "an image with no entrypoint and no command", image: "hyperkube", wantError: "has no entrypoint"},
		{name: "a program outside the image's directories", image: "etcd", command: []string{"/opt/etcd"}, wantError: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			image := tc.image
			if _, ok := payloadImages[image]; ok {
				image = r.Image(image, "4.17.0")
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}, Status: corev1.PodStatus{PodIP: "127.1.0.9"}}
			path, argv, err := c.resolve(pod, &corev1.Container{Name: "c", Image: image}, tc.command, tc.args)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) || errors.Is(err, nodeagent.ErrImagePull) != tc.pull {
					t.Fatalf("resolve = %q, %v; want an error with %q (image pull error: %v)", path, err, tc.wantError, tc.pull)
				}
				return
			}
			if err != nil || path != tc.wantPath || (tc.wantArgv != nil && !reflect.DeepEqual(argv, tc.wantArgv)) {
				t.Fatalf("resolve = %q %q, %v; want %q %q", path, argv, err, tc.wantPath, tc.wantArgv)
			}
		})
	}
}
