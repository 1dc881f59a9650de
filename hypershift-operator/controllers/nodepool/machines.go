package nodepool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
	"github.com/hypershift-le/hypershift/support/apply"
)

// Reasons of the conditions of a pool of platform Pod: hyperv1's, kept
// here for those that name them from this package.
const (
	PlatformMismatchReason = hyperv1.PlatformMismatchReason
	MachinesNotReadyReason = hyperv1.MachinesNotReadyReason
	RollingOutReason       = hyperv1.RollingOutReason
)

// checkPlatform says whether the HostedCluster runs machines of the pool's
// platform: None everywhere, Pod on a HostedCluster of platform Pod.
func checkPlatform(np *hyperv1.NodePool, hc *hyperv1.HostedCluster, set func(string, metav1.ConditionStatus, string, string)) bool {
	if np.Spec.Platform.Type == hyperv1.PodPlatform && hc.Spec.Platform.Type != hyperv1.PodPlatform {
		message := fmt.Sprintf("HostedCluster %s/%s is of platform %s, which runs no machines: create the pool with platform None (you bring the machines), or for a HostedCluster of platform Pod",
			hc.Namespace, hc.Name, hc.Spec.Platform.Type)
		set(hyperv1.ValidPlatformConfig, metav1.ConditionFalse, hyperv1.PlatformMismatchReason, message)
		set(hyperv1.Ready, metav1.ConditionFalse, hyperv1.PlatformMismatchReason, message)
		return false
	}
	set(hyperv1.ValidPlatformConfig, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Platform "+string(np.Spec.Platform.Type)+" is supported by the HostedCluster")
	return true
}

// reconcileMachines keeps the pool's machines (platform Pod): the
// bootstrap Secret and PodMachineTemplate of its current config, the
// MachineDeployment that runs them, the MachineHealthCheck while
// autoRepair is on; and removes the Secrets and templates no MachineSet
// uses any more. It reports AllMachinesReady, UpdatingVersion and the
// version the machines run.
func (r *Reconciler) reconcileMachines(ctx context.Context, np *hyperv1.NodePool, in machineInputs, release releaseCheck, set func(string, metav1.ConditionStatus, string, string)) error {
	applier := apply.Applier{Client: r.Client, FieldOwner: FieldOwner}
	objects := []client.Object{bootstrapSecret(in), podMachineTemplate(in), machineDeployment(in)}
	if np.Spec.Management.AutoRepair {
		objects = append(objects, machineHealthCheck(in))
	} else if err := r.deleteMachineHealthCheck(ctx, machineHealthCheck(in)); err != nil {
		return fmt.Errorf("failed to delete the MachineHealthCheck of NodePool %s/%s: %w", np.Namespace, np.Name, err)
	}
	for _, obj := range objects {
		if _, err := applier.Apply(ctx, obj); err != nil {
			return fmt.Errorf("failed to apply %T %s of NodePool %s/%s: %w", obj, obj.GetName(), np.Namespace, np.Name, err)
		}
	}
	namespace := in.meta("").Namespace
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(namespace), client.MatchingLabels(in.poolLabels())); err != nil {
		return err
	}
	sets := &clusterv1.MachineSetList{}
	if err := r.Client.List(ctx, sets, client.InNamespace(namespace), client.MatchingLabels(in.poolLabels())); err != nil {
		return err
	}
	r.reportMachines(np, in, sets.Items, machines.Items, release, set)
	return r.removeUnusedRevisions(ctx, in, sets.Items)
}

// deleteMachineHealthCheck deletes mhc if it is there: read first (from
// the cache), so that a pass over a pool without autoRepair, which is
// most passes of most pools, sends the API server no delete.
func (r *Reconciler) deleteMachineHealthCheck(ctx context.Context, mhc *clusterv1.MachineHealthCheck) error {
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(mhc), &clusterv1.MachineHealthCheck{}); err != nil {
		return client.IgnoreNotFound(err)
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, mhc))
}

// reportMachines sets AllMachinesReady (the machines' Ready conditions),
// and UpdatingVersion and status.version: the version is the release's
// once every machine is of the current config (made by a MachineSet of
// the current template).
func (r *Reconciler) reportMachines(np *hyperv1.NodePool, in machineInputs, sets []clusterv1.MachineSet, machines []clusterv1.Machine, release releaseCheck, set func(string, metav1.ConditionStatus, string, string)) {
	var notReady []string
	for i := range machines {
		m := &machines[i]
		c := meta.FindStatusCondition(m.Status.Conditions, clusterv1.ReadyCondition)
		switch {
		case c == nil:
			notReady = append(notReady, m.Name+" (no Ready condition yet)")
		case c.Status != metav1.ConditionTrue:
			notReady = append(notReady, fmt.Sprintf("%s (%s: %s)", m.Name, c.Reason, firstLine(c.Message)))
		}
	}
	slices.Sort(notReady)
	switch {
	case len(notReady) > 0:
		set(hyperv1.AllMachinesReady, metav1.ConditionFalse, hyperv1.MachinesNotReadyReason, fmt.Sprintf("%d of %d machines are not ready: %s", len(notReady), len(machines), names(notReady)))
	default:
		set(hyperv1.AllMachinesReady, metav1.ConditionTrue, hyperv1.AsExpectedReason, fmt.Sprintf("All %d machines are ready", len(machines)))
	}

	// A machine is up to date when its MachineSet makes machines of the
	// current template.
	current := templateName(np.Name, in.revision())
	currentSets := map[string]bool{}
	for _, ms := range sets {
		currentSets[ms.Name] = ms.Spec.Template.Spec.InfrastructureRef.Name == current
	}
	upToDate := int32(0)
	for i := range machines {
		if currentSets[machines[i].Labels[clusterv1.MachineSetNameLabel]] {
			upToDate++
		}
	}
	// Every machine left is of the current config (a pool scaled to 0
	// runs the release vacuously).
	rolledOut := upToDate == int32(len(machines))
	switch {
	case rolledOut || np.Status.Version == "":
		// A new pool's first machines are of its release from the start.
		if rolledOut {
			np.Status.Version = release.version
		}
		set(hyperv1.UpdatingVersion, metav1.ConditionFalse, hyperv1.AsExpectedReason, "The machines run the pool's release")
	case np.Status.Version != release.version:
		set(hyperv1.UpdatingVersion, metav1.ConditionTrue, hyperv1.RollingOutReason,
			fmt.Sprintf("Updating from %s to %s: %d of %d machines run it", np.Status.Version, release.version, upToDate, len(machines)))
	default:
		set(hyperv1.UpdatingVersion, metav1.ConditionFalse, hyperv1.RollingOutReason,
			fmt.Sprintf("Replacing machines of an earlier configuration of release %s: %d of %d up to date", release.version, upToDate, len(machines)))
	}
}

// firstLine is a message's first line.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// removeUnusedRevisions deletes the pool's bootstrap Secrets and
// PodMachineTemplates that neither the MachineDeployment nor any of its
// MachineSets (an earlier revision being scaled down) uses.
func (r *Reconciler) removeUnusedRevisions(ctx context.Context, in machineInputs, sets []clusterv1.MachineSet) error {
	used := map[string]bool{
		bootstrapSecretName(in.pool.Name, in.revision()): true,
		templateName(in.pool.Name, in.revision()):        true,
	}
	for _, ms := range sets {
		used[ms.Spec.Template.Spec.InfrastructureRef.Name] = true
		if name := ms.Spec.Template.Spec.Bootstrap.DataSecretName; name != nil {
			used[*name] = true
		}
	}
	return r.removeRevisionsExcept(ctx, in, used)
}

// removeRevisionsExcept deletes the pool's bootstrap Secrets and
// PodMachineTemplates whose names used does not hold.
func (r *Reconciler) removeRevisionsExcept(ctx context.Context, in machineInputs, used map[string]bool) error {
	namespace := in.meta("").Namespace
	var errs []error
	templates := &infrav1.PodMachineTemplateList{}
	if err := r.Client.List(ctx, templates, client.InNamespace(namespace), client.MatchingLabels(in.poolLabels())); err != nil {
		return err
	}
	for i := range templates.Items {
		if t := &templates.Items[i]; !used[t.Name] {
			errs = append(errs, client.IgnoreNotFound(r.Client.Delete(ctx, t)))
		}
	}
	secrets := &corev1.SecretList{}
	if err := r.APIReader.List(ctx, secrets, client.InNamespace(namespace), client.MatchingLabels(in.poolLabels())); err != nil {
		return err
	}
	for i := range secrets.Items {
		if s := &secrets.Items[i]; !used[s.Name] {
			errs = append(errs, client.IgnoreNotFound(r.Client.Delete(ctx, s)))
		}
	}
	return errors.Join(errs...)
}

// deleteMachines deletes the pool's MachineHealthCheck and
// MachineDeployment (cluster-api drains and deletes every machine, then
// their Nodes), and, once no Machine of the pool is left, its templates
// and bootstrap Secrets. It returns the machines left, each with what its
// deletion waits for (cluster-api's Deleting condition: a drain that a
// PodDisruptionBudget holds up, say).
//
// With clusterGoing (the HostedCluster is being deleted, or gone), the
// machines are not drained, nor waited on for volumes to detach: the
// hosted cluster goes with them, its workloads have nowhere to move, and a
// PodDisruptionBudget would hold the teardown for good. cluster-api skips
// drains for the same reason when its Cluster is deleted; here the pools
// go first, while the Cluster stays, so the HO says so on each Machine.
func (r *Reconciler) deleteMachines(ctx context.Context, np *hyperv1.NodePool, namespace string, clusterGoing bool) ([]string, error) {
	labels := client.MatchingLabels{clusterv1.ClusterNameLabel: np.Spec.ClusterName, hyperv1.NodePoolLabel: np.Name}
	for _, obj := range []client.Object{
		&clusterv1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: np.Name}},
		&clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: np.Name}},
	} {
		if err := r.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("failed to delete %T %s of NodePool %s/%s: %w", obj, np.Name, np.Namespace, np.Name, err)
		}
	}
	machines := &clusterv1.MachineList{}
	if err := r.APIReader.List(ctx, machines, client.InNamespace(namespace), labels); err != nil && !meta.IsNoMatchError(err) {
		return nil, err
	}
	if len(machines.Items) > 0 {
		var left []string
		for i := range machines.Items {
			m := &machines.Items[i]
			if clusterGoing {
				if err := r.skipDrain(ctx, m); err != nil {
					return nil, err
				}
			}
			why := "not deleted yet"
			if c := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineDeletingCondition); c != nil && c.Status == metav1.ConditionTrue {
				why = strings.Join(strings.Fields(c.Message), " ")
			}
			left = append(left, m.Name+" ("+why+")")
		}
		slices.Sort(left)
		return left, nil
	}
	// No MachineSet is left to use them either.
	return nil, r.removeRevisionsExcept(ctx, machineInputs{pool: np, cluster: np.Spec.ClusterName}, map[string]bool{})
}

// skipDrain annotates machine m, unless it is already, so that cluster-api
// deletes it without draining its node or waiting for its volumes.
func (r *Reconciler) skipDrain(ctx context.Context, m *clusterv1.Machine) error {
	_, drain := m.Annotations[clusterv1.ExcludeNodeDrainingAnnotation]
	_, volumes := m.Annotations[clusterv1.ExcludeWaitForNodeVolumeDetachAnnotation]
	if drain && volumes {
		return nil
	}
	patch := client.MergeFrom(m.DeepCopy())
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[clusterv1.ExcludeNodeDrainingAnnotation] = "the HostedCluster is being deleted"
	m.Annotations[clusterv1.ExcludeWaitForNodeVolumeDetachAnnotation] = "the HostedCluster is being deleted"
	if err := r.Client.Patch(ctx, m, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to mark Machine %s/%s not to be drained: %w", m.Namespace, m.Name, err)
	}
	return nil
}
