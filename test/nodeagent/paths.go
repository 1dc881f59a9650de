package nodeagent

import (
	"sort"
	"strings"
)

// pathBoundary holds the characters that may stand right before an
// absolute path inside an argument or a value ("--cert=/etc/x",
// "a.crt,/etc/b.crt", "cat /etc/x", "PATH=/a:/b", "'/etc/x'").
const pathBoundary = "=,: \t\n;\"'"

// rewritePaths replaces, in s, every absolute path that falls under a
// mount's path (the mount path itself, or anything below it) by the same
// path under the mount's host directory. A path counts when it starts s or
// follows one of pathBoundary, and ends there or at another boundary; the
// deepest mount wins, and each path is rewritten once.
func rewritePaths(s string, mounts []mountPoint) string {
	if len(mounts) == 0 || !strings.Contains(s, "/") {
		return s
	}
	ordered := deepestFirst(mounts)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '/' && (i == 0 || strings.IndexByte(pathBoundary, s[i-1]) >= 0) {
			if m, ok := mountAt(s[i:], ordered); ok {
				b.WriteString(m.host)
				i += len(m.path) - 1
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountAt returns the first mount of ordered whose path starts rest and
// ends at a path boundary of rest.
func mountAt(rest string, ordered []mountPoint) (mountPoint, bool) {
	for _, m := range ordered {
		if !strings.HasPrefix(rest, m.path) {
			continue
		}
		if len(rest) == len(m.path) || rest[len(m.path)] == '/' || strings.IndexByte(pathBoundary, rest[len(m.path)]) >= 0 {
			return m, true
		}
	}
	return mountPoint{}, false
}

// deepestFirst orders mounts by decreasing path length, leaving out the
// root mount (rewriting every path is never what a pod means).
func deepestFirst(mounts []mountPoint) []mountPoint {
	out := make([]mountPoint, 0, len(mounts))
	for _, m := range mounts {
		if m.path != "/" && strings.HasPrefix(m.path, "/") {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].path) > len(out[j].path) })
	return out
}

func rewriteAllPaths(in []string, mounts []mountPoint) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = rewritePaths(s, mounts)
	}
	return out
}
