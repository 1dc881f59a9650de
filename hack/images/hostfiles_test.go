package images

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestHostProgramRunsOnItsOwnLibraries builds an image with the machine's
// iptables and runs it chrooted into the image's files: it finds its
// loader, libraries and extensions in the image alone, under every name
// kube-proxy calls it by.
func TestHostProgramRunsOnItsOwnLibraries(t *testing.T) {
	if _, err := os.Stat(IPTables.Path); err != nil {
		t.Fatalf("%s: %v (make nodepkgs installs iptables)", IPTables.Path, err)
	}
	if os.Geteuid() != 0 {
		t.Fatal("chroot needs root, as the real-node tests do")
	}
	img, err := Build(Spec{Programs: []string{"pause"}, HostPrograms: []HostProgram{IPTables}}, pauseBin(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	root := extract(t, img)
	for _, name := range IPTables.Links {
		cmd := exec.Command("/usr/sbin/"+name, "--version")
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "nf_tables") {
			t.Errorf("%s --version in the image: %v\n%s", name, err, out)
		}
	}
	// The extensions kube-proxy's rules use load, those that are another's
	// name included (libxt_MASQUERADE.so links to libxt_NAT.so).
	for _, extension := range []string{"-m comment", "-m statistic", "-m conntrack", "-m mark", "-j MASQUERADE", "-j DNAT", "-j MARK"} {
		args := append(strings.Fields(extension), "-h")
		cmd := exec.Command("/usr/sbin/iptables", args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		cmd.Dir = "/"
		out, err := cmd.CombinedOutput()
		name := strings.Fields(extension)[1]
		if err != nil || !strings.Contains(string(out), name+" ") {
			t.Errorf("iptables %s -h in the image: %v\n%s", extension, err, out)
		}
	}
	if out, _ := exec.Command("chroot", root, "/usr/sbin/iptables", "-j", "MASQUERADE", "-h").CombinedOutput(); !strings.Contains(string(out), "--random-fully") {
		t.Errorf("MASQUERADE in the image does not know --random-fully, which kube-proxy's rules use:\n%s", out)
	}
}

// TestMachineProgramsRunInTheImage builds the machine image's programs of
// this machine's packages and runs each chrooted into the image's files:
// containerd, its shim and runc, the CNI plugins, mount and umount find
// what they run on in the image alone.
func TestMachineProgramsRunInTheImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("chroot needs root, as the real-node tests do")
	}
	img, err := Build(Spec{Programs: []string{"pause"}, HostPrograms: Machine.HostPrograms}, pauseBin(t), nil)
	if err != nil {
		t.Fatalf("%v (make nodepkgs installs containerd, runc and the CNI plugins)", err)
	}
	root := extract(t, img)
	for _, run := range []struct {
		args []string
		env  string
		want string
	}{
		{args: []string{"/usr/bin/containerd", "--version"}, want: "containerd"},
		{args: []string{"/usr/bin/containerd-shim-runc-v2", "-v"}, want: "containerd-shim-runc-v2"},
		{args: []string{"/usr/sbin/runc", "--version"}, want: "runc version"},
		{args: []string{"/usr/bin/mount", "--version"}, want: "mount from util-linux"},
		{args: []string{"/usr/bin/umount", "--version"}, want: "umount from util-linux"},
		{args: []string{"/usr/lib/cni/bridge"}, env: "CNI_COMMAND=VERSION", want: "supportedVersions"},
		{args: []string{"/usr/lib/cni/host-local"}, env: "CNI_COMMAND=VERSION", want: "supportedVersions"},
		{args: []string{"/usr/lib/cni/loopback"}, env: "CNI_COMMAND=VERSION", want: "supportedVersions"},
		{args: []string{"/usr/lib/cni/portmap"}, env: "CNI_COMMAND=VERSION", want: "supportedVersions"},
	} {
		cmd := exec.Command(run.args[0], run.args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin", run.env}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), run.want) {
			t.Errorf("%s in the image: %v\n%s", strings.Join(run.args, " "), err, out)
		}
	}
}

// pauseBin builds the pause program, static, into a directory of its own.
func pauseBin(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "pause"), "./pause")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// extract writes an image's files into a new directory and returns it.
func extract(t *testing.T, img v1.Image) string {
	t.Helper()
	root := t.TempDir()
	r := tar.NewReader(mutate.Extract(img))
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return root
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, path)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(r); err == nil {
				err = os.WriteFile(path, data, os.FileMode(h.Mode))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
