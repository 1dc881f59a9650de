// Package resources sizes the containers of a hosted control plane: the
// defaults each renderer gives (requests from measurements, a memory limit
// as a bound), HyperShift's per-HostedCluster override of the requests
// (annotation resource-request-override.hypershift.openshift.io/<deployment>.<container>:
// memory=<quantity>,cpu=<quantity>), and a Go program's memory limit
// derived from its container's (GOMEMLIMIT), so that the garbage collector
// works harder before the kernel kills the process.
package resources

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

// Defaults are a container's requests and memory limit, as quantities
// ("100m", "256Mi"). No CPU limit: a throttled kube-apiserver or etcd
// answers late and loses its leases; requests give each its share when
// the node is busy.
type Defaults struct {
	CPU, Memory, MemoryLimit string
}

// For returns the resources of container container of workload workload
// (a Deployment's or StatefulSet's name): d, with the requests annotations
// (a HostedCluster's or HostedControlPlane's) override. A memory request
// above the limit raises the limit to it: the user asked for that much.
func For(annotations map[string]string, workload, container string, d Defaults) (corev1.ResourceRequirements, error) {
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(d.CPU), corev1.ResourceMemory: resource.MustParse(d.Memory)},
	}
	if d.MemoryLimit != "" {
		r.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(d.MemoryLimit)}
	}
	key := hyperv1.ResourceRequestOverrideAnnotationPrefix + "/" + workload + "." + container
	value, ok := annotations[key]
	if !ok {
		return r, nil
	}
	for _, item := range strings.Split(value, ",") {
		name, quantity, found := strings.Cut(strings.TrimSpace(item), "=")
		if !found {
			return r, fmt.Errorf("annotation %s is %q: want memory=<quantity>,cpu=<quantity> (either or both), e.g. memory=512Mi,cpu=250m", key, value)
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(quantity))
		if err != nil || q.Sign() <= 0 {
			return r, fmt.Errorf("annotation %s is %q: %q is not a positive quantity (e.g. 512Mi, 250m)", key, value, quantity)
		}
		switch corev1.ResourceName(strings.TrimSpace(name)) {
		case corev1.ResourceMemory:
			r.Requests[corev1.ResourceMemory] = q
			if limit, ok := r.Limits[corev1.ResourceMemory]; ok && q.Cmp(limit) > 0 {
				r.Limits[corev1.ResourceMemory] = q
			}
		case corev1.ResourceCPU:
			r.Requests[corev1.ResourceCPU] = q
		default:
			return r, fmt.Errorf("annotation %s is %q: %q is not a resource it sets: memory or cpu", key, value, name)
		}
	}
	return r, nil
}

// GoMemoryLimitFraction is the share of a container's memory limit a Go
// program of it is told to stay under (GOMEMLIMIT): the rest is what the
// runtime does not count (stacks of many goroutines, the program's own
// mapped binary, buffers of the kernel charged to the container), so that
// a busy program collects harder instead of being killed. 100% would
// leave nothing for those, and the kernel kills first.
const GoMemoryLimitFraction = 0.8

// goMemLimit is GOMEMLIMIT's syntax: bytes, optionally with a unit.
var goMemLimit = regexp.MustCompile(`^[0-9]+(B|KiB|MiB|GiB|TiB)?$`)

// GoRuntimeEnv is the environment that tunes a Go program's collector in a
// container of resources r: GOMEMLIMIT from the annotation
// memoryLimitAnnotation (Go's syntax, e.g. 800MiB, or a Kubernetes
// quantity, e.g. 800Mi), else GoMemoryLimitFraction of the memory limit
// (none without a limit); GOGC from gogcAnnotation (a percentage, or off),
// else defaultGOGC (none when empty: Go's 100).
func GoRuntimeEnv(annotations map[string]string, memoryLimitAnnotation, gogcAnnotation, defaultGOGC string, r corev1.ResourceRequirements) ([]corev1.EnvVar, error) {
	var env []corev1.EnvVar
	switch value, ok := annotations[memoryLimitAnnotation]; {
	case ok && goMemLimit.MatchString(value):
		env = append(env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: value})
	case ok:
		q, err := resource.ParseQuantity(value)
		if err != nil || q.Sign() <= 0 {
			return nil, fmt.Errorf("annotation %s is %q: want a memory size, as GOMEMLIMIT takes it (e.g. 800MiB) or as a quantity (e.g. 800Mi)", memoryLimitAnnotation, value)
		}
		env = append(env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: strconv.FormatInt(q.Value(), 10)})
	default:
		if limit, ok := r.Limits[corev1.ResourceMemory]; ok {
			env = append(env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: strconv.FormatInt(int64(float64(limit.Value())*GoMemoryLimitFraction), 10)})
		}
	}
	if value, ok := annotations[gogcAnnotation]; ok {
		if n, err := strconv.Atoi(value); value != "off" && (err != nil || n <= 0) {
			return nil, fmt.Errorf("annotation %s is %q: want a percentage above 0 (GOGC, e.g. 50) or off", gogcAnnotation, value)
		}
		env = append(env, corev1.EnvVar{Name: "GOGC", Value: value})
	} else if defaultGOGC != "" {
		env = append(env, corev1.EnvVar{Name: "GOGC", Value: defaultGOGC})
	}
	return env, nil
}
