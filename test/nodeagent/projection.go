package nodeagent

import (
	"fmt"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// defaultFileMode is the mode of a projected file when nothing sets one.
const defaultFileMode = 0o644

// fileMode returns mode when set, else fallback, else the default.
func fileMode(mode, fallback *int32) os.FileMode {
	switch {
	case mode != nil:
		return os.FileMode(*mode) & os.ModePerm
	case fallback != nil:
		return os.FileMode(*fallback) & os.ModePerm
	}
	return defaultFileMode
}

// projectKeys turns the data of a Secret or ConfigMap into files: every key
// when items is empty, else the listed keys at their paths. A listed key
// that is missing is an error unless optional.
func projectKeys(kind, name string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool, into map[string]fileProjection) error {
	if len(items) == 0 {
		for key, value := range data {
			into[key] = fileProjection{data: value, mode: fileMode(nil, defaultMode)}
		}
		return nil
	}
	for _, item := range items {
		value, ok := data[item.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("%s %q has no key %q", kind, name, item.Key)
		}
		into[item.Path] = fileProjection{data: value, mode: fileMode(item.Mode, defaultMode)}
	}
	return nil
}

// secretFiles projects a Secret of the pod's namespace. A missing Secret
// projects nothing when optional.
func (a *Agent) secretFiles(namespace, name string, items []corev1.KeyToPath, defaultMode *int32, optional *bool, into map[string]fileProjection) error {
	secret, err := a.secrets.Secrets(namespace).Get(name)
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("secret %q not found", name)
	}
	if err != nil {
		return fmt.Errorf("failed to get secret %q: %w", name, err)
	}
	return projectKeys("secret", name, secret.Data, items, defaultMode, optional != nil && *optional, into)
}

// configMapFiles projects a ConfigMap of the pod's namespace, its data and
// binaryData alike.
func (a *Agent) configMapFiles(namespace, name string, items []corev1.KeyToPath, defaultMode *int32, optional *bool, into map[string]fileProjection) error {
	cm, err := a.configMaps.ConfigMaps(namespace).Get(name)
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("configmap %q not found", name)
	}
	if err != nil {
		return fmt.Errorf("failed to get configmap %q: %w", name, err)
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for key, value := range cm.Data {
		data[key] = []byte(value)
	}
	for key, value := range cm.BinaryData {
		data[key] = value
	}
	return projectKeys("configmap", name, data, items, defaultMode, optional != nil && *optional, into)
}

// downwardFiles projects fields of the pod.
func downwardFiles(pod *corev1.Pod, podIP string, items []corev1.DownwardAPIVolumeFile, defaultMode *int32, into map[string]fileProjection) error {
	for _, item := range items {
		if item.FieldRef == nil {
			return fmt.Errorf("downward API file %q: only fieldRef is supported", item.Path)
		}
		value, err := downwardValue(pod, item.FieldRef, podIP)
		if err != nil {
			return fmt.Errorf("downward API file %q: %w", item.Path, err)
		}
		into[item.Path] = fileProjection{data: []byte(value), mode: fileMode(item.Mode, defaultMode)}
	}
	return nil
}

// downwardValue resolves a field of a downward API volume: the fields env
// supports, and the pod's labels and annotations as the kubelet formats
// them.
func downwardValue(pod *corev1.Pod, ref *corev1.ObjectFieldSelector, podIP string) (string, error) {
	switch ref.FieldPath {
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	return fieldValue(pod, ref, podIP)
}

// formatMap writes key="value" lines in key order, as the kubelet does.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	lines := make([]string, 0, len(keys))
	for _, key := range keys {
		lines = append(lines, fmt.Sprintf("%s=%q", key, m[key]))
	}
	return strings.Join(lines, "\n")
}
