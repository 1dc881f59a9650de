package v1beta1

// PodMachine status, as the control-plane-operator writes it.
const (
	// ReadyCondition is True while a PodMachine's Pod runs and has an
	// address: cluster-api's Ready condition of an infrastructure machine.
	ReadyCondition = "Ready"
)

// Reasons of a PodMachine's Ready condition.
const (
	// WaitingForMachineReason: False, no Machine owns the PodMachine yet.
	WaitingForMachineReason = "WaitingForMachine"
	// WaitingForBootstrapDataReason: False, the Machine has no bootstrap
	// data yet.
	WaitingForBootstrapDataReason = "WaitingForBootstrapData"
	// PodPendingReason: False, the machine's Pod is not running yet, or
	// runs without an address.
	PodPendingReason = "PodPending"
	// PodRunningReason: True, the machine's Pod runs.
	PodRunningReason = "PodRunning"
	// PodFailedReason: False, the machine's Pod ended.
	PodFailedReason = "PodFailed"
)

// MachinePodLabel names, on a machine's Pod, its PodMachine: the
// hypershift-operator's NetworkPolicies select the machines by it.
const MachinePodLabel = "infrastructure.hypershift.openshift.io/pod-machine"
