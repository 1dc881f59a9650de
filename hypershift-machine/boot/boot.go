package boot

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Paths inside the machine.
const (
	// JoinDir holds the NodePool's join material (a Secret volume): the
	// bootstrap kubeconfig, the hosted cluster's CA, the kubelet drop-in.
	JoinDir = "/etc/hypershift/join"
	// PullSecretFile is the hosted cluster's pull secret (a Secret
	// volume's key), the credentials the kubelet pulls images with.
	PullSecretFile = "/etc/hypershift/pull-secret/" + ".dockerconfigjson"
	// KubeletDir is the kubelet's root directory, on the machine's disk.
	KubeletDir = "/var/lib/kubelet"
	// ConfigDir holds the configuration the machine writes at boot.
	ConfigDir = "/etc/hypershift/machine"
	// CNIBinDir holds the CNI plugins of the machine image.
	CNIBinDir = "/usr/lib/cni"
	// ContainerdSocket is containerd's socket.
	ContainerdSocket = "/run/containerd/containerd.sock"
)

// Options describe one machine, as its Pod's environment gives them.
type Options struct {
	// Name is the machine's name: its Node's name in the hosted cluster.
	Name string
	// Address is the machine's address (the Pod's IP): its Node's
	// InternalIP, where the hosted kube-apiserver reaches the kubelet.
	Address netip.Addr
	// ProviderID is what the kubelet registers its Node with, so that the
	// machine's Machine finds its Node.
	ProviderID string
	// SandboxImage is the pause image of the machine's pod sandboxes.
	SandboxImage string
	// InsecureRegistries are registry hosts reached over plain HTTP.
	InsecureRegistries []string
	// NodeLabels are labels the kubelet registers its Node with.
	NodeLabels map[string]string
	// KubeletPath is the kubelet program.
	KubeletPath string
}

// Validate refuses a machine that could not join.
func (o Options) Validate() error {
	var errs []error
	if o.Name == "" {
		errs = append(errs, errors.New("no machine name (MACHINE_NAME)"))
	}
	if !o.Address.IsValid() {
		errs = append(errs, errors.New("no machine address (MACHINE_ADDRESS)"))
	}
	if o.ProviderID == "" {
		errs = append(errs, errors.New("no provider ID (PROVIDER_ID)"))
	}
	if o.SandboxImage == "" {
		errs = append(errs, errors.New("no sandbox image (SANDBOX_IMAGE)"))
	}
	return errors.Join(errs...)
}

// step is one named step of bringing the machine up.
type step struct {
	name string
	do   func(context.Context) error
}

// Run brings the machine up and supervises containerd and the kubelet
// until ctx ends (then stops them, kubelet first) or one of them exits,
// which it returns as an error: the machine goes down with it.
func Run(ctx context.Context, log logr.Logger, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	m := &machine{opts: o, log: log, reaper: newReaper()}
	steps := []step{
		{"mount the cgroup hierarchies", m.mountCgroups},
		{"write the configuration", m.writeFiles},
		{"start containerd", m.startContainerd},
		{"get the kubelet's client certificate", m.bootstrapKubelet},
		{"start the kubelet", m.startKubelet},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.do(ctx); err != nil {
			m.stop()
			return fmt.Errorf("machine %s: failed to %s: %w", o.Name, s.name, err)
		}
		log.Info("Machine step done", "step", s.name, "took", time.Since(start).Round(time.Millisecond).String())
	}
	return m.supervise(ctx)
}

// machine is a machine being brought up.
type machine struct {
	opts      Options
	log       logr.Logger
	cgroup    string
	reaper    *reaper
	processes []*process
}

// readJoin reads one file of the join material.
func readJoin(key string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(JoinDir, key))
	if err != nil {
		return nil, fmt.Errorf("the join material has no %s (is the NodePool's join Secret mounted at %s?): %w", key, JoinDir, err)
	}
	return data, nil
}

// kubeletArgs is the kubelet's command line.
func (m *machine) kubeletArgs() []string {
	args := []string{
		"--config=" + filepath.Join(ConfigDir, "kubelet.yaml"),
		"--config-dir=" + filepath.Join(ConfigDir, "kubelet.conf.d"),
		"--bootstrap-kubeconfig=" + filepath.Join(JoinDir, hyperv1.BootstrapKubeconfigKey),
		"--kubeconfig=" + filepath.Join(KubeletDir, "kubeconfig"),
		"--root-dir=" + KubeletDir,
		"--cert-dir=" + filepath.Join(KubeletDir, "pki"),
		"--hostname-override=" + m.opts.Name,
		"--node-ip=" + m.opts.Address.String(),
	}
	if len(m.opts.NodeLabels) > 0 {
		var labels []string
		for k, v := range m.opts.NodeLabels {
			labels = append(labels, k+"="+v)
		}
		args = append(args, "--node-labels="+strings.Join(sorted(labels), ","))
	}
	return args
}
