package nodeagent

// Partition cuts the pod namespace/name off from the API server, as a
// network partition cuts a node's kubelet off: from then on the agent acts
// on nothing the API says of the pod (its deletion included) and writes no
// status for it, while its processes keep running, and restart as their
// restart policy says. Heal ends the partition: the agent then catches up,
// and stops the processes of a pod that was deleted meanwhile. Both report
// false when the agent runs no pod of that name. For tests of what a
// process of a pod that is gone from the API can still do.
func (a *Agent) Partition(namespace, name string) bool {
	rt := a.runtimeFor(namespace, name)
	if rt == nil {
		return false
	}
	rt.setPartitioned(true)
	return true
}

// Heal ends a Partition of the pod namespace/name.
func (a *Agent) Heal(namespace, name string) bool {
	rt := a.runtimeFor(namespace, name)
	if rt == nil {
		return false
	}
	rt.setPartitioned(false)
	return true
}

// setPartitioned starts or ends a partition: while it lasts, the worker
// sees the pod as it was when the partition started.
func (p *podRuntime) setPartitioned(partitioned bool) {
	p.mu.Lock()
	if partitioned && p.partitionedAs == nil {
		p.partitionedAs = p.pod
	}
	if !partitioned {
		p.partitionedAs = nil
	}
	p.mu.Unlock()
	p.poke()
}
