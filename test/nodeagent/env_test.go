package nodeagent

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "EMPTY": "", "B": "$(A)"}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for in, want := range map[string]string{
		"plain":           "plain",
		"$(A)":            "a",
		"x$(A)y$(A)z":     "xayaz",
		"$(EMPTY)-":       "-",
		"$(B)":            "$(A)", // values are not expanded again
		"$$(A)":           "$(A)",
		"$$$(A)":          "$a",
		"$$":              "$",
		"$(UNDEFINED)":    "$(UNDEFINED)",
		"$(A":             "$(A",
		"$A":              "$A",
		"trailing$":       "trailing$",
		"$()":             "$()",
		"--ip=$(A):$(A)/": "--ip=a:a/",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRewriteListenArgs(t *testing.T) {
	got := rewriteListenArgs([]string{
		"--secure-port=:6443", "--bind-address=0.0.0.0:10257", "--listen=127.0.0.1:1", "--addr=:http",
		"-short=:1", "--x=1.0.0.0:1", ":8080", "--url=https://:1",
	}, "127.1.0.9")
	want := []string{
		"--secure-port=127.1.0.9:6443", "--bind-address=127.1.0.9:10257", "--listen=127.0.0.1:1", "--addr=:http",
		"-short=:1", "--x=1.0.0.0:1", ":8080", "--url=https://:1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rewriteListenArgs = %q, want %q", got, want)
	}
}

func TestContainerEnvRejectsUnsupportedSources(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	for _, c := range []corev1.Container{
		{Name: "c", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['a']"}}}}},
		{Name: "c", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}}}},
		{Name: "c", EnvFrom: []corev1.EnvFromSource{{Prefix: "P"}}},
	} {
		if _, err := containerEnv(pod, &c, "127.1.0.1", "/home", "", nil); err == nil {
			t.Errorf("containerEnv(%+v) should fail", c)
		}
	}
}

func TestIPAllocator(t *testing.T) {
	a, err := newIPAllocator(netip.MustParsePrefix("127.1.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	first, _ := a.allocate("")
	if first != "127.1.0.1" {
		t.Errorf("the first address is %s, want 127.1.0.1", first)
	}
	if again, _ := a.allocate(first); again == first {
		t.Errorf("an address in use was handed out again")
	}
	a.release(first)
	if again, _ := a.allocate(first); again != first {
		t.Errorf("a free preferred address was not honoured: got %s", again)
	}

	small, err := newIPAllocator(netip.MustParsePrefix("127.9.9.0/30"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for {
		ip, err := small.allocate("")
		if err != nil {
			break
		}
		if seen[ip] {
			t.Fatalf("%s was handed out twice", ip)
		}
		seen[ip] = true
	}
	if len(seen) != 2 {
		t.Errorf("a /30 holds 2 usable addresses, got %v", seen)
	}
	for _, bad := range []string{"10.0.0.0/8", "127.0.0.0/31", "::1/128"} {
		if _, err := newIPAllocator(netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("prefix %s should be refused", bad)
		}
	}
}
