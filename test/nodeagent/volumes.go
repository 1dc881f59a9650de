package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// volumeResync is how often a pod's volumes are compared with their
// sources even when no event said they changed.
const volumeResync = time.Minute

// podVolumes materializes the volumes of one pod under <pod dir>/volumes,
// and keeps the projected ones (Secret, ConfigMap, downward API,
// ServiceAccount token) up to date.
type podVolumes struct {
	p    *podRuntime
	root string

	mu sync.Mutex
	// paths maps a volume's name to where its files are on the host.
	paths  map[string]string
	tokens map[string]*boundToken
}

// mountPoint is where a volumeMount's mountPath is on the host.
type mountPoint struct {
	path string
	host string
}

func newPodVolumes(p *podRuntime) *podVolumes {
	return &podVolumes{p: p, root: filepath.Join(p.dir, "volumes"), paths: map[string]string{}, tokens: map[string]*boundToken{}}
}

// sync sets up every volume of the pod, or brings it up to date; a
// volume whose files did not change is not written. The error names each
// volume that failed, the way the kubelet's FailedMount events do.
func (v *podVolumes) sync(ctx context.Context, pod *corev1.Pod) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		path, err := v.setUp(ctx, pod, vol)
		if err != nil {
			errs = append(errs, fmt.Errorf("MountVolume.SetUp failed for volume %q: %w", vol.Name, err))
			continue
		}
		v.paths[vol.Name] = path
	}
	return errors.Join(errs...)
}

// setUp materializes one volume and returns its host path.
func (v *podVolumes) setUp(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume) (string, error) {
	dir := filepath.Join(v.root, vol.Name)
	a := v.p.agent
	files := map[string]fileProjection{}
	var err error
	switch src := vol.VolumeSource; {
	case src.EmptyDir != nil:
		return dir, os.MkdirAll(dir, 0o777)
	case src.PersistentVolumeClaim != nil:
		return a.claimPath(pod.Namespace, src.PersistentVolumeClaim.ClaimName)
	case src.Secret != nil:
		err = a.secretFiles(pod.Namespace, src.Secret.SecretName, src.Secret.Items, src.Secret.DefaultMode, src.Secret.Optional, files)
	case src.ConfigMap != nil:
		err = a.configMapFiles(pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.DefaultMode, src.ConfigMap.Optional, files)
	case src.DownwardAPI != nil:
		err = downwardFiles(pod, v.p.ip, src.DownwardAPI.Items, src.DownwardAPI.DefaultMode, files)
	case src.Projected != nil:
		err = v.projectedFiles(ctx, pod, src.Projected, files)
	default:
		return "", fmt.Errorf("volume type %s is not supported by the node agent", volumeType(vol))
	}
	if err != nil {
		return "", err
	}
	changed, err := writeAtomically(dir, files)
	if changed && err == nil {
		v.p.log.V(1).Info("Wrote volume", "volume", vol.Name)
	}
	return dir, err
}

// projectedFiles projects every source of a projected volume.
func (v *podVolumes) projectedFiles(ctx context.Context, pod *corev1.Pod, src *corev1.ProjectedVolumeSource, into map[string]fileProjection) error {
	a := v.p.agent
	for _, s := range src.Sources {
		var err error
		switch {
		case s.Secret != nil:
			err = a.secretFiles(pod.Namespace, s.Secret.Name, s.Secret.Items, src.DefaultMode, s.Secret.Optional, into)
		case s.ConfigMap != nil:
			err = a.configMapFiles(pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, src.DefaultMode, s.ConfigMap.Optional, into)
		case s.DownwardAPI != nil:
			err = downwardFiles(pod, v.p.ip, s.DownwardAPI.Items, src.DefaultMode, into)
		case s.ServiceAccountToken != nil:
			var token string
			token, err = v.token(ctx, pod, s.ServiceAccountToken)
			mode := fileMode(nil, src.DefaultMode)
			if src.DefaultMode == nil {
				mode = 0o600
			}
			into[s.ServiceAccountToken.Path] = fileProjection{data: []byte(token), mode: mode}
		default:
			err = errors.New("only secret, configMap, downwardAPI and serviceAccountToken sources are supported")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// volumeType names the source a volume uses, as the API spells it.
func volumeType(vol *corev1.Volume) string {
	raw, err := json.Marshal(vol.VolumeSource)
	if err != nil {
		return "unknown"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || len(fields) == 0 {
		return "unknown"
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// mountPoints returns where each volumeMount of the container is on the
// host: its volume's path, joined with subPath (or subPathExpr expanded
// with the container's environment). A subPath of a directory volume is
// created when missing, as the kubelet does.
func (v *podVolumes) mountPoints(c *corev1.Container, env *envList) ([]mountPoint, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]mountPoint, 0, len(c.VolumeMounts))
	for _, m := range c.VolumeMounts {
		host, ok := v.paths[m.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no volume of that name is set up", m.Name)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = expand(m.SubPathExpr, env.lookup)
		}
		if sub != "" {
			if filepath.IsAbs(sub) || strings.HasPrefix(filepath.Clean(sub), "..") {
				return nil, fmt.Errorf("volumeMount %q: subPath %q must be a relative path inside the volume", m.Name, sub)
			}
			host = filepath.Join(host, sub)
			if _, err := os.Lstat(host); errors.Is(err, os.ErrNotExist) && !v.isProjected(m.Name) {
				if err := os.MkdirAll(host, 0o777); err != nil {
					return nil, fmt.Errorf("volumeMount %q: failed to create subPath: %w", m.Name, err)
				}
			}
		}
		out = append(out, mountPoint{path: filepath.Clean(m.MountPath), host: host})
	}
	return out, nil
}

// isProjected reports whether a volume's files are written by the agent
// (a subPath in it names a file, which the agent does not create).
func (v *podVolumes) isProjected(name string) bool {
	_, err := os.Lstat(filepath.Join(v.paths[name], dataDirName))
	return err == nil
}
