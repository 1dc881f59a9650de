package nodes

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ContainerPID is the host's process ID of a running container's first
// process, by its ID (a pod status's containerID without "containerd://"),
// as the node's containerd records it: for tests that kill or freeze it.
func (n *Node) ContainerPID(id string) (int, bool) {
	raw, err := os.ReadFile(filepath.Join(n.opts.RunDir, "containerd", "io.containerd.runtime.v2.task", "k8s.io", id, "init.pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	// The file outlives the process for a moment: only a live process in
	// the container's own cgroup is it.
	cgroups, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil || !strings.Contains(string(cgroups), id) {
		return 0, false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if fields := strings.Fields(string(status[strings.LastIndexByte(string(status), ')')+1:])); err != nil || len(fields) == 0 || fields[0] == "Z" {
		return 0, false
	}
	return pid, true
}

// Partition cuts the node's own processes (the kubelet, kube-proxy) off
// from server (host:port), as a network partition cuts a node off its
// control plane: their packets to it and its packets to them are dropped
// (both ways: a watch's events would still arrive over a connection whose
// outgoing packets alone are dropped), while what its pods send and
// receive (forwarded, not the node's own) still passes. The rules live in
// the node's network namespace and go with it.
func (n *Node) Partition(server string) error {
	return n.partitionRules("-I", server)
}

// Heal ends a Partition.
func (n *Node) Heal(server string) error {
	return n.partitionRules("-D", server)
}

func (n *Node) partitionRules(op, server string) error {
	host, port, ok := strings.Cut(server, ":")
	if !ok {
		return fmt.Errorf("server %q is not host:port", server)
	}
	for _, rule := range [][]string{
		{"OUTPUT", "-d", host, "-p", "tcp", "--dport", port},
		{"INPUT", "-s", host, "-p", "tcp", "--sport", port},
	} {
		args := append([]string{"--net=/run/netns/" + n.Namespace, "--", "iptables", "-w", op}, rule...)
		if err := run("nsenter", append(args, "-j", "DROP", "-m", "comment", "--comment", "partitioned by a test")...); err != nil {
			return err
		}
	}
	return nil
}
