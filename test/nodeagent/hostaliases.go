package nodeagent

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// hostAliases maps each host name of a pod's spec.hostAliases to its
// address; the first alias that names a host wins, as in /etc/hosts.
func hostAliases(pod *corev1.Pod) map[string]string {
	if len(pod.Spec.HostAliases) == 0 {
		return nil
	}
	aliases := map[string]string{}
	for _, alias := range pod.Spec.HostAliases {
		for _, name := range alias.Hostnames {
			if _, ok := aliases[name]; !ok && name != "" {
				aliases[name] = alias.IP
			}
		}
	}
	return aliases
}

// rewriteHostAliases replaces, in s, every URL host that aliases names by
// its address: "https://etcd-1:2380" becomes "https://10.0.0.7:2380". A
// host counts where it follows "//" and ends at the end of s or at a
// character no host name holds (":", "/", ",", a quote, a space, ...).
func rewriteHostAliases(s string, aliases map[string]string) string {
	if len(aliases) == 0 || !strings.Contains(s, "//") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "//")
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		start := i + j + 2
		end := start
		for end < len(s) && isHostChar(s[end]) {
			end++
		}
		b.WriteString(s[i:start])
		if ip, ok := aliases[s[start:end]]; ok {
			b.WriteString(ip)
		} else {
			b.WriteString(s[start:end])
		}
		i = end
	}
	return b.String()
}

func isHostChar(c byte) bool {
	return c == '-' || c == '.' || c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func rewriteAllHostAliases(in []string, aliases map[string]string) []string {
	if in == nil || len(aliases) == 0 {
		return in
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = rewriteHostAliases(s, aliases)
	}
	return out
}
