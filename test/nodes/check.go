package nodes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// InstallCommand installs what a node needs from Debian's packages.
const InstallCommand = "apt-get install -y --no-install-recommends containerd runc containernetworking-plugins iptables iproute2"

// CheckHost refuses, with the command that installs it, a host that lacks a
// program or CNI plugin a node runs, or a kubelet in binDir.
func CheckHost(binDir, cniBinDir string) error {
	var missing []string
	for _, program := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ip", "iptables", "nsenter"} {
		if _, err := exec.LookPath(program); err != nil {
			missing = append(missing, program)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			missing = append(missing, filepath.Join(cniBinDir, plugin))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("this machine lacks %s, which nodes need: install them with `%s`", strings.Join(missing, ", "), InstallCommand)
	}
	if _, err := os.Stat(filepath.Join(binDir, "kubelet")); err != nil {
		return fmt.Errorf("no kubelet in %s: build it with `make testbin`", binDir)
	}
	return nil
}
