// Package podmachine is cluster-api's infrastructure provider for NodePools
// of platform Pod, run by the control-plane-operator while it leads (a
// standby makes no machine): for each PodMachine (cluster-api's Machine
// clones it from its MachineDeployment's PodMachineTemplate) it runs the
// machine as a privileged Pod of the same name in the control-plane
// namespace (MachinePod: the machine image's hypershift-machine, which
// joins the hosted cluster with the Machine's bootstrap data, a NodePool's
// join material), sets the providerID its kubelet registers with, and
// reports the Pod's address and whether it runs. A deleted PodMachine
// (cluster-api deletes it once the Machine's node is drained) deletes its
// Pod, and goes once the Pod is gone. It also marks its cluster's
// PodCluster provisioned: the management cluster is the infrastructure.
//
// What it writes: Pods (created and deleted, never updated: a machine's
// Pod is the machine), and the PodMachines' and PodCluster's spec.providerID,
// finalizer and status, under the field manager FieldOwner.
package podmachine
