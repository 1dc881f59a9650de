package nodeagent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRewriteHostAliases(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{HostAliases: []corev1.HostAlias{
		{IP: "127.200.0.10", Hostnames: []string{"etcd-0"}},
		{IP: "127.200.0.11", Hostnames: []string{"etcd-1", "etcd-1.example"}},
		{IP: "127.200.0.99", Hostnames: []string{"etcd-1"}},
	}}}
	aliases := hostAliases(pod)
	for _, tc := range []struct{ name, in, want string }{
		{name: "a URL's host is the alias's address", in: "--initial-advertise-peer-urls=https://etcd-0:2380",
			want: "--initial-advertise-peer-urls=https://127.200.0.10:2380"},
		{name: "every URL of a list, not the member names before them",
			in:   "--initial-cluster=etcd-0=https://etcd-0:2380,etcd-1=https://etcd-1:2380",
			want: "--initial-cluster=etcd-0=https://127.200.0.10:2380,etcd-1=https://127.200.0.11:2380"},
		{name: "the first alias of a name wins, and a dotted name is a name of its own", in: "http://etcd-1/x http://etcd-1.example",
			want: "http://127.200.0.11/x http://127.200.0.11"},
		{name: "a longer host that starts with an alias is left alone", in: "https://etcd-0x:2380 https://etcd-0.other:1",
			want: "https://etcd-0x:2380 https://etcd-0.other:1"},
		{name: "a name outside a URL is left alone", in: "--name=etcd-0", want: "--name=etcd-0"},
		{name: "a path after // is not a host", in: "file:///etcd-0", want: "file:///etcd-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rewriteHostAliases(tc.in, aliases); got != tc.want {
				t.Errorf("rewriteHostAliases(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := rewriteHostAliases("https://etcd-0:2380", hostAliases(&corev1.Pod{})); got != "https://etcd-0:2380" {
		t.Errorf("without hostAliases, %q", got)
	}
}
