package nodeagent

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// defaultPath is a process's PATH when the agent has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// envList is an ordered set of environment variables; setting a name again
// replaces its value in place.
type envList struct {
	names  []string
	values map[string]string
}

func (e *envList) set(name, value string) {
	if e.values == nil {
		e.values = map[string]string{}
	}
	if _, ok := e.values[name]; !ok {
		e.names = append(e.names, name)
	}
	e.values[name] = value
}

func (e *envList) lookup(name string) (string, bool) {
	v, ok := e.values[name]
	return v, ok
}

// rewritePaths points the values' paths under volume mounts at the host
// (see rewritePaths).
func (e *envList) rewritePaths(mounts []mountPoint) {
	for name, value := range e.values {
		e.values[name] = rewritePaths(value, mounts)
	}
}

// rewriteHostAliases points the values' URLs on a host name of the pod's
// hostAliases at its address (see rewriteHostAliases).
func (e *envList) rewriteHostAliases(aliases map[string]string) {
	for name, value := range e.values {
		e.values[name] = rewriteHostAliases(value, aliases)
	}
}

// environ returns the list in the NAME=value form of os/exec.
func (e *envList) environ() []string {
	out := make([]string, 0, len(e.names))
	for _, name := range e.names {
		out = append(out, name+"="+e.values[name])
	}
	return out
}

// containerEnv returns a container's environment: PATH, HOME and POD_IP,
// then the Services' variables (see serviceEnv), then the container's env
// in order (each value expanded against the variables before it, as the
// kubelet does), then KUBECONFIG when the pod gets a kubeconfig. Nothing of
// the agent's own environment but PATH leaks in.
func containerEnv(pod *corev1.Pod, c *corev1.Container, podIP, home, kubeconfig string, services []corev1.EnvVar) (*envList, error) {
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %s: envFrom is not supported", c.Name)
	}
	env := &envList{}
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	env.set("PATH", path)
	env.set("HOME", home)
	env.set("POD_IP", podIP)
	for _, v := range services {
		env.set(v.Name, v.Value)
	}
	for _, v := range c.Env {
		if v.ValueFrom == nil {
			env.set(v.Name, expand(v.Value, env.lookup))
			continue
		}
		if v.ValueFrom.FieldRef == nil {
			return nil, fmt.Errorf("container %s: env %s: only value and valueFrom.fieldRef are supported", c.Name, v.Name)
		}
		value, err := fieldValue(pod, v.ValueFrom.FieldRef, podIP)
		if err != nil {
			return nil, fmt.Errorf("container %s: env %s: %w", c.Name, v.Name, err)
		}
		env.set(v.Name, value)
	}
	if kubeconfig != "" {
		env.set("KUBECONFIG", kubeconfig)
	}
	return env, nil
}

// fieldValue resolves a downward API field reference.
func fieldValue(pod *corev1.Pod, ref *corev1.ObjectFieldSelector, podIP string) (string, error) {
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return "", fmt.Errorf("fieldRef apiVersion %q is not supported", ref.APIVersion)
	}
	switch ref.FieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	return "", fmt.Errorf("fieldRef %q is not supported", ref.FieldPath)
}

// expand replaces $(NAME) in s by the value of NAME when it is defined,
// the Kubernetes way: "$$" is an escaped "$" (so "$$(NAME)" stays
// "$(NAME)"), and a reference to an undefined name, or one left open, stays
// as it is.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				// An open reference: keep "$(" and go on after it.
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if value, ok := lookup(name); ok {
				b.WriteString(value)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

func expandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, lookup)
	}
	return out
}

// listenArg matches --<flag>=:<port> and --<flag>=0.0.0.0:<port>;
// anyAddressArg matches --<flag>=0.0.0.0; anyAddressURL matches a URL on
// 0.0.0.0 in a --<flag>= value, alone or in a comma-separated list.
var (
	listenArg     = regexp.MustCompile(`^(--[^=]+=)(?:0\.0\.0\.0)?:([0-9]+)$`)
	anyAddressArg = regexp.MustCompile(`^(--[^=]+=)0\.0\.0\.0$`)
	anyAddressURL = regexp.MustCompile(`([=,][a-z][a-z0-9+.-]*://)0\.0\.0\.0([:/,]|$)`)
)

// rewriteListenArgs points listen addresses on every interface at the
// pod's own address, so that pods listening on the same port do not clash.
func rewriteListenArgs(args []string, podIP string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	for i, arg := range args {
		arg = listenArg.ReplaceAllString(arg, "${1}"+podIP+":${2}")
		arg = anyAddressArg.ReplaceAllString(arg, "${1}"+podIP)
		if strings.HasPrefix(arg, "--") {
			// Twice: a match consumes the comma that starts the next one.
			for range 2 {
				arg = anyAddressURL.ReplaceAllString(arg, "${1}"+podIP+"${2}")
			}
		}
		out[i] = arg
	}
	return out
}
