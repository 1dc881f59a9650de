package resources

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
)

const key = hyperv1.ResourceRequestOverrideAnnotationPrefix + "/kube-apiserver.kube-apiserver"

var defaults = Defaults{CPU: "200m", Memory: "256Mi", MemoryLimit: "1Gi"}

func quantities(r corev1.ResourceRequirements) (cpu, memory, limit string) {
	l := r.Limits[corev1.ResourceMemory]
	c, m := r.Requests[corev1.ResourceCPU], r.Requests[corev1.ResourceMemory]
	return c.String(), m.String(), l.String()
}

func TestFor(t *testing.T) {
	for _, tc := range []struct {
		name               string
		annotations        map[string]string
		cpu, memory, limit string
		wantErr            string
	}{
		{name: "no annotation: the defaults", cpu: "200m", memory: "256Mi", limit: "1Gi"},
		{name: "another container's annotation: the defaults", annotations: map[string]string{hyperv1.ResourceRequestOverrideAnnotationPrefix + "/etcd.etcd": "memory=2Gi"}, cpu: "200m", memory: "256Mi", limit: "1Gi"},
		{name: "both overridden", annotations: map[string]string{key: "memory=512Mi,cpu=1"}, cpu: "1", memory: "512Mi", limit: "1Gi"},
		{name: "cpu alone, spaces allowed", annotations: map[string]string{key: " cpu = 500m "}, cpu: "500m", memory: "256Mi", limit: "1Gi"},
		{name: "a memory request above the limit raises the limit", annotations: map[string]string{key: "memory=3Gi"}, cpu: "200m", memory: "3Gi", limit: "3Gi"},
		{name: "not a quantity", annotations: map[string]string{key: "memory=lots"}, wantErr: `"lots" is not a positive quantity`},
		{name: "zero", annotations: map[string]string{key: "cpu=0"}, wantErr: `"0" is not a positive quantity`},
		{name: "not a pair", annotations: map[string]string{key: "512Mi"}, wantErr: "want memory=<quantity>,cpu=<quantity>"},
		{name: "another resource", annotations: map[string]string{key: "gpu=1"}, wantErr: `"gpu" is not a resource it sets: memory or cpu`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := For(tc.annotations, "kube-apiserver", "kube-apiserver", defaults)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), key) {
					t.Fatalf("error %v, want one naming %s and saying %q", err, key, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cpu, memory, limit := quantities(r); cpu != tc.cpu || memory != tc.memory || limit != tc.limit {
				t.Errorf("cpu %s memory %s limit %s, want %s %s %s", cpu, memory, limit, tc.cpu, tc.memory, tc.limit)
			}
		})
	}
}

func TestGoRuntimeEnv(t *testing.T) {
	const memKey, gcKey = hyperv1.KubeAPIServerGoMemoryLimitAnnotation, hyperv1.KubeAPIServerGOGCAnnotation
	limited := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		gogc        string
		r           corev1.ResourceRequirements
		want        string
		wantErr     string
	}{
		{name: "80% of the limit by default", r: limited, want: "GOMEMLIMIT=858993459"},
		{name: "no limit, no annotation: nothing", want: ""},
		{name: "Go's syntax kept", annotations: map[string]string{memKey: "700MiB"}, r: limited, want: "GOMEMLIMIT=700MiB"},
		{name: "a quantity in bytes", annotations: map[string]string{memKey: "700Mi"}, r: limited, want: "GOMEMLIMIT=734003200"},
		{name: "GOGC", annotations: map[string]string{gcKey: "50"}, r: limited, want: "GOMEMLIMIT=858993459 GOGC=50"},
		{name: "GOGC off", annotations: map[string]string{gcKey: "off"}, want: "GOGC=off"},
		{name: "the default GOGC", gogc: "50", r: limited, want: "GOMEMLIMIT=858993459 GOGC=50"},
		{name: "the annotation over the default GOGC", gogc: "50", annotations: map[string]string{gcKey: "100"}, r: limited, want: "GOMEMLIMIT=858993459 GOGC=100"},
		{name: "bad memory limit", annotations: map[string]string{memKey: "much"}, wantErr: "want a memory size"},
		{name: "bad GOGC", annotations: map[string]string{gcKey: "-1"}, wantErr: "want a percentage above 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := GoRuntimeEnv(tc.annotations, memKey, gcKey, tc.gogc, tc.r)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range env {
				got = append(got, e.Name+"="+e.Value)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("env %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}
