package boot

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hypershift-le/hypershift/support/testutil"
)

// A machine Pod's /proc/self/cgroup on a management node with cgroup v1
// and the unified hierarchy beside it (systemd's hybrid layout).
const hybrid = `9:name=systemd:/kubepods/besteffort/pod1/abc
8:pids:/kubepods/besteffort/pod1/abc
4:memory:/kubepods/besteffort/pod1/abc
2:cpu,cpuacct:/kubepods/besteffort/pod1/abc
0::/kubepods/besteffort/pod1/abc
`

func TestParseCgroups(t *testing.T) {
	hs, err := parseCgroups(hybrid)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, h := range hs {
		dirs = append(dirs, h.mountDir())
	}
	if diff := cmp.Diff([]string{"systemd", "pids", "memory", "cpu,cpuacct", "unified"}, dirs); diff != "" {
		t.Errorf("mount directories (-want +got):\n%s", diff)
	}
	if _, err := parseCgroups(""); err == nil {
		t.Error("an empty /proc/self/cgroup: got no error")
	}
}

func TestCgroupRoot(t *testing.T) {
	t.Run("on cgroup v1, the memory controller's path: the Pod's own cgroup", func(t *testing.T) {
		hs, _ := parseCgroups(hybrid)
		root, err := cgroupRoot(hs)
		if err != nil || root != "/kubepods/besteffort/pod1/abc" {
			t.Errorf("got %q, %v", root, err)
		}
	})
	t.Run("on cgroup v2 only, a clear refusal", func(t *testing.T) {
		hs, _ := parseCgroups("0::/kubepods/pod1/abc\n")
		if _, err := cgroupRoot(hs); err == nil || !strings.Contains(err.Error(), "cgroup v2 only") {
			t.Errorf("got %v", err)
		}
	})
}

func testMachine() *machine {
	return &machine{
		opts: Options{
			Name: "workers-abc12", Address: netip.MustParseAddr("198.19.1.9"), ProviderID: "pod://clusters-demo/workers-abc12",
			SandboxImage: "registry.example.com:5000/pause@sha256:0123", InsecureRegistries: []string{"registry.example.com:5000"},
			NodeLabels: map[string]string{"b": "2", "a": "1"}, KubeletPath: "/usr/bin/kubelet",
		},
		cgroup: "/kubepods/besteffort/pod1/abc",
	}
}

// TestConfiguration compares containerd's and the kubelet's configuration
// of a machine with golden files (UPDATE=true rewrites them).
func TestConfiguration(t *testing.T) {
	m := testMachine()
	for name, text := range map[string]string{"containerd.toml": containerdConfig, "kubelet.yaml": kubeletConfig} {
		got, err := render(name, text, m.values())
		if err != nil {
			t.Fatal(err)
		}
		testutil.CompareBytesWithGolden(t, name, got)
	}
	testutil.CompareBytesWithGolden(t, "kubelet.args", []byte(strings.Join(m.kubeletArgs(), "\n")+"\n"))
}

func TestValidate(t *testing.T) {
	if err := testMachine().opts.Validate(); err != nil {
		t.Errorf("a complete machine: %v", err)
	}
	err := Options{}.Validate()
	for _, want := range []string{"no machine name", "no machine address", "no provider ID", "no sandbox image"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("an empty machine: got %v, want %q in it", err, want)
		}
	}
}
