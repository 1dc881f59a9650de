package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// PartitionWithPods cuts the node and its pods off from server: what
// Partition drops, and what the node forwards between its pods and server
// (after kube-proxy's translation of a Service address, such as the
// kubernetes Service's, to server), both ways. The node's processes and
// its pods' keep running and reach everything else.
func (n *Node) PartitionWithPods(server string) error {
	return n.partitionRules("-I", server, "FORWARD")
}

// HealWithPods ends a PartitionWithPods.
func (n *Node) HealWithPods(server string) error {
	return n.partitionRules("-D", server, "FORWARD")
}

// partitionRules inserts (-I) or deletes (-D) the rules dropping the
// traffic between server and the node's own processes, and in the
// forwarded chains too.
func (n *Node) partitionRules(op, server string, forwarded ...string) error {
	host, port, ok := strings.Cut(server, ":")
	if !ok {
		return fmt.Errorf("server %q is not host:port", server)
	}
	rules := [][]string{
		{"OUTPUT", "-d", host, "-p", "tcp", "--dport", port},
		{"INPUT", "-s", host, "-p", "tcp", "--sport", port},
	}
	for _, chain := range forwarded {
		rules = append(rules,
			[]string{chain, "-d", host, "-p", "tcp", "--dport", port},
			[]string{chain, "-s", host, "-p", "tcp", "--sport", port})
	}
	for _, rule := range rules {
		args := append([]string{"--net=/run/netns/" + n.Namespace, "--", "iptables", "-w", op}, rule...)
		if err := run("nsenter", append(args, "-j", "DROP", "-m", "comment", "--comment", "partitioned by a test")...); err != nil {
			return err
		}
	}
	return nil
}

// Lose kills the node as a machine that dies is gone: the kubelet,
// kube-proxy and containerd first (nothing reports what follows), then
// containerd's shims and every container of the node's pods, each with
// SIGKILL, within milliseconds. The Node and its pods' objects are left as
// they are: Ready and Running until the cluster notices the silence. The
// network namespace, files and mounts stay, as a powered-off machine's
// disks do; Return brings the node back.
func (n *Node) Lose() error {
	n.mu.Lock()
	procs := n.procs
	n.procs = nil
	n.mu.Unlock()
	for _, name := range []string{"kubelet", "kube-proxy", "containerd"} {
		if p := procs[name]; p != nil {
			_ = p.Signal(syscall.SIGKILL)
		}
	}
	_ = killMatching(filepath.Join(n.opts.RunDir, "containerd.sock"))
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + n.cgroupRoot())
	if unified := "/sys/fs/cgroup/" + n.cgroupRoot(); exists(unified) {
		roots = append(roots, unified)
	}
	for _, root := range roots {
		killCgroup(root)
	}
	// A killed process leaves its cgroup once it has exited; one forked
	// meanwhile (by a shim that had not been killed yet) is killed on the
	// next round.
	deadline := time.Now().Add(10 * time.Second)
	for slices.ContainsFunc(roots, cgroupHoldsProcesses) {
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: processes of its pods still run 10s after SIGKILL", n.Name)
		}
		time.Sleep(50 * time.Millisecond)
		for _, root := range roots {
			killCgroup(root)
		}
	}
	return nil
}

// Return brings a lost node back, as a machine that boots again: containerd,
// the kubelet and kube-proxy start on the node's files, and the kubelet
// finds its pods' containers gone and starts them again. It waits until the
// API server shows the node Ready.
func (n *Node) Return(ctx context.Context, h *Host, c client.Client) error {
	// The Node may still read Ready from before the loss: only a status
	// the kubelet posted since counts.
	returned := time.Now().Truncate(time.Second)
	for _, s := range []step{
		{"start containerd", n.startContainerd},
		{"start the kubelet", n.startKubelet},
		{"start kube-proxy", n.startKubeProxy},
		{"wait until Ready", func(ctx context.Context, _ *Host) error { return n.awaitReadySince(ctx, c, returned, 2*time.Minute) }},
	} {
		if err := s.do(ctx, h); err != nil {
			return fmt.Errorf("node %s: failed to %s after its loss: %w", n.Name, s.name, err)
		}
	}
	return nil
}

// awaitReadySince waits until the Node is Ready by a status posted at or
// after since (any, when since is zero); otherwise it says why, with the
// kubelet's last log lines.
func (n *Node) awaitReadySince(ctx context.Context, c client.Client, since time.Time, timeout time.Duration) error {
	return waitFor(ctx, timeout, func() error {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: n.opts.Name}, node); err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status == corev1.ConditionTrue && !cond.LastHeartbeatTime.Time.Before(since) {
					return nil
				}
				return fmt.Errorf("condition Ready=%s (%s) posted %s: %s", cond.Status, cond.Reason, cond.LastHeartbeatTime, cond.Message)
			}
		}
		return errors.New("no Ready condition yet")
	}, func() string { return tail(filepath.Join(n.opts.Dir, "kubelet.log")) })
}

// RestartKubelet kills the node's kubelet (SIGKILL, as a crash) and starts
// it again, as a kubelet restart or upgrade does: containerd and the pods'
// containers run on throughout. It waits until the API server shows the
// node Ready by a status the new kubelet posted.
func (n *Node) RestartKubelet(ctx context.Context, h *Host, c client.Client) error {
	n.mu.Lock()
	kubelet := n.procs["kubelet"]
	delete(n.procs, "kubelet")
	n.mu.Unlock()
	if kubelet == nil {
		return fmt.Errorf("node %s runs no kubelet", n.Name)
	}
	// Ready counts only by a status posted since the kill, to the second:
	// the kill comes right after a second begins, so that a status the old
	// kubelet posted in the same second cannot pass for the new one's.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	restarted := time.Now().Truncate(time.Second)
	if err := kubelet.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("node %s: failed to kill its kubelet: %w", n.Name, err)
	}
	// Its PID is gone once it has exited: a new kubelet must not find the
	// old one's sockets in use.
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(kubelet.Pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s: its kubelet still runs 10s after SIGKILL", n.Name)
		}
	}
	if err := n.startKubelet(ctx, h); err != nil {
		return fmt.Errorf("node %s: failed to start the kubelet again: %w", n.Name, err)
	}
	return n.awaitReadySince(ctx, c, restarted, 2*time.Minute)
}
