package boot

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"text/template"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

var (
	//go:embed containerd.toml
	containerdConfig string
	//go:embed kubelet.yaml
	kubeletConfig string
)

// values fill the configuration templates.
func (m *machine) values() map[string]any {
	return map[string]any{
		"Name": m.opts.Name, "Address": m.opts.Address.String(), "ProviderID": m.opts.ProviderID,
		"SandboxImage": m.opts.SandboxImage, "InsecureRegistries": m.opts.InsecureRegistries,
		"CNIBinDir": CNIBinDir, "CgroupRoot": m.cgroup,
		"ClientCAFile": filepath.Join(JoinDir, hyperv1.CACertKey),
	}
}

// render fills a configuration template.
func render(name, text string, values map[string]any) ([]byte, error) {
	var b bytes.Buffer
	if err := template.Must(template.New(name).Option("missingkey=error").Parse(text)).Execute(&b, values); err != nil {
		return nil, fmt.Errorf("failed to fill %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// writeFiles writes containerd's and the kubelet's configuration, the
// hosted cluster's drop-in over the latter, and the pull secret where the
// kubelet reads its credentials.
func (m *machine) writeFiles(context.Context) error {
	files := map[string][]byte{}
	for name, text := range map[string]string{"containerd.toml": containerdConfig, "kubelet.yaml": kubeletConfig} {
		data, err := render(name, text, m.values())
		if err != nil {
			return err
		}
		files[filepath.Join(ConfigDir, name)] = data
	}
	dropIn, err := readJoin(hyperv1.KubeletConfigKey)
	if err != nil {
		return err
	}
	files[filepath.Join(ConfigDir, "kubelet.conf.d", "50-hosted-cluster.conf")] = dropIn
	if _, err := readJoin(hyperv1.BootstrapKubeconfigKey); err != nil {
		return err
	}
	// The kubelet reads image pull credentials from config.json in its
	// root directory, as from a node's global pull secret.
	switch pullSecret, err := os.ReadFile(PullSecretFile); {
	case err == nil:
		files[filepath.Join(KubeletDir, "config.json")] = pullSecret
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	for _, name := range slices.Sorted(slices.Values(names)) {
		if err := writeFile(name, files[name]); err != nil {
			return err
		}
	}
	// containerd watches the CNI directory for the pod network's
	// configuration, which the hosted cluster's pod network writes.
	return os.MkdirAll("/etc/cni/net.d", 0o755)
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
