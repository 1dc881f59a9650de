package nodepool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	infrav1 "github.com/hypershift-le/hypershift/api/infrastructure/v1beta1"
)

// The machines of a NodePool of platform Pod, in cluster-api's shape, as
// HyperShift makes its NodePools' machines: a MachineDeployment per pool,
// in the control-plane namespace, whose machines are made from a
// PodMachineTemplate and join with a bootstrap Secret, both named after
// the pool's config (release, machine images, kubelet configuration): a
// new config is a new template and Secret, which cluster-api rolls out as
// the pool's management says. A MachineHealthCheck replaces machines whose
// node stays unhealthy, when autoRepair is on. cluster-api's CRDs are
// installed without their webhooks, so every field their defaulting would
// set is set here.

// Annotations of a NodePool that tune its MachineHealthCheck (HyperShift's).
const (
	// MachineHealthCheckTimeoutAnnotation is how long a node may be not
	// Ready (False or Unknown) before its machine is replaced; 8m when
	// unset, as HyperShift's default.
	MachineHealthCheckTimeoutAnnotation = "hypershift.openshift.io/machine-health-check-timeout"
	// MachineHealthCheckNodeStartupTimeoutAnnotation is how long a new
	// machine has to join as a node; 20m when unset.
	MachineHealthCheckNodeStartupTimeoutAnnotation = "hypershift.openshift.io/machine-health-check-node-startup-timeout"
	// MachineHealthCheckMaxUnhealthyAnnotation is how many unhealthy
	// machines (a number, or a percentage of the pool) are still replaced;
	// beyond it, none is (a fault of the platform, not of machines). 2
	// when unset.
	MachineHealthCheckMaxUnhealthyAnnotation = "hypershift.openshift.io/machine-health-check-max-unhealthy"
)

// Defaults of the MachineHealthCheck, HyperShift's.
var (
	defaultHealthCheckTimeout     = 8 * time.Minute
	defaultNodeStartupTimeout     = 20 * time.Minute
	defaultHealthCheckMaxUnhealth = intstr.FromInt32(2)
)

// machineInputs are what a pool's machines derive from.
type machineInputs struct {
	pool    *hyperv1.NodePool
	cluster string
	// join is the join material of the pool's current config (the
	// bootstrap kubeconfig with its current token, the CA, the kubelet
	// configuration).
	join map[string][]byte
	// configHash names the pool's config (release and kubelet
	// configuration).
	configHash string
	// machineImage and sandboxImage are the release payload's.
	machineImage, sandboxImage string
	// insecureRegistries are the registry hosts the operators reach over
	// plain HTTP: the machines pull from them too.
	insecureRegistries []string
}

// templateSpec is every machine's spec.
func (in machineInputs) templateSpec() infrav1.PodMachineSpec {
	return infrav1.PodMachineSpec{Image: in.machineImage, SandboxImage: in.sandboxImage, InsecureRegistries: in.insecureRegistries}
}

// revision names what a machine of the pool is made of: its config and
// its template. Machines of another revision are replaced.
func (in machineInputs) revision() string {
	spec, _ := json.Marshal(in.templateSpec())
	h := sha256.New()
	h.Write([]byte(in.configHash))
	h.Write([]byte{0})
	h.Write(spec)
	return hex.EncodeToString(h.Sum(nil))[:10]
}

// poolLabels select the pool's cluster-api objects.
func (in machineInputs) poolLabels() map[string]string {
	return map[string]string{clusterv1.ClusterNameLabel: in.cluster, hyperv1.NodePoolLabel: in.pool.Name}
}

func (in machineInputs) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:   hyperv1.ControlPlaneNamespace(in.pool.Namespace, in.pool.Spec.ClusterName),
		Name:        name,
		Labels:      in.poolLabels(),
		Annotations: map[string]string{hyperv1.ClusterAnnotation: in.pool.Namespace + "/" + in.pool.Spec.ClusterName},
	}
}

// bootstrapSecretName names the bootstrap Secret of a revision.
func bootstrapSecretName(pool, revision string) string { return pool + "-join-" + revision }

// templateName names the PodMachineTemplate of a revision.
func templateName(pool, revision string) string { return pool + "-" + revision }

// bootstrapSecret is the machines' bootstrap data: the pool's join
// material, under the keys of the join Secret of platform None (the
// machine image mounts it whole; cluster-api reads none of it).
func bootstrapSecret(in machineInputs) *corev1.Secret {
	data := map[string][]byte{}
	for k, v := range in.join {
		data[k] = v
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: in.meta(bootstrapSecretName(in.pool.Name, in.revision())),
		Type:       clusterv1.ClusterSecretType,
		Data:       data,
	}
}

// podMachineTemplate is what the revision's machines are made from.
func podMachineTemplate(in machineInputs) *infrav1.PodMachineTemplate {
	return &infrav1.PodMachineTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "PodMachineTemplate"},
		ObjectMeta: in.meta(templateName(in.pool.Name, in.revision())),
		Spec:       infrav1.PodMachineTemplateSpec{Template: infrav1.PodMachineTemplateResource{Spec: in.templateSpec()}},
	}
}

// machineDeployment runs spec.replicas machines of the current revision,
// replaced as the pool's management says.
func machineDeployment(in machineInputs) *clusterv1.MachineDeployment {
	np := in.pool
	revision := in.revision()
	md := &clusterv1.MachineDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineDeployment"},
		ObjectMeta: in.meta(np.Name),
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: in.cluster,
			Replicas:    ptr.To(ptr.Deref(np.Spec.Replicas, 0)),
			Selector:    metav1.LabelSelector{MatchLabels: in.poolLabels()},
			Rollout:     clusterv1.MachineDeploymentRolloutSpec{Strategy: rolloutStrategy(np.Spec.Management)},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: in.poolLabels()},
				Spec: clusterv1.MachineSpec{
					ClusterName:       in.cluster,
					Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To(bootstrapSecretName(np.Name, revision))},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "PodMachineTemplate", Name: templateName(np.Name, revision)},
				},
			},
		},
	}
	if np.Spec.NodeDrainTimeout != nil && np.Spec.NodeDrainTimeout.Duration > 0 {
		md.Spec.Template.Spec.Deletion.NodeDrainTimeoutSeconds = ptr.To(int32(np.Spec.NodeDrainTimeout.Seconds()))
	}
	return md
}

// rolloutStrategy is the MachineDeployment's strategy of a pool's
// management: RollingUpdate with its bounds (maxSurge 1 and
// maxUnavailable 0 unless set), or OnDelete.
func rolloutStrategy(m hyperv1.NodePoolManagement) clusterv1.MachineDeploymentRolloutStrategy {
	if m.Replace != nil && m.Replace.Strategy == hyperv1.UpgradeStrategyOnDelete {
		return clusterv1.MachineDeploymentRolloutStrategy{Type: clusterv1.OnDeleteMachineDeploymentStrategyType}
	}
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	if m.Replace != nil && m.Replace.RollingUpdate != nil {
		if m.Replace.RollingUpdate.MaxSurge != nil {
			surge = *m.Replace.RollingUpdate.MaxSurge
		}
		if m.Replace.RollingUpdate.MaxUnavailable != nil {
			unavailable = *m.Replace.RollingUpdate.MaxUnavailable
		}
	}
	return clusterv1.MachineDeploymentRolloutStrategy{
		Type:          clusterv1.RollingUpdateMachineDeploymentStrategyType,
		RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{MaxSurge: &surge, MaxUnavailable: &unavailable},
	}
}

// machineHealthCheck replaces a machine of the pool whose node stays not
// Ready, or never joins, as the pool's annotations (or HyperShift's
// defaults) say; an annotation that does not parse keeps its default.
func machineHealthCheck(in machineInputs) *clusterv1.MachineHealthCheck {
	np := in.pool
	duration := func(annotation string, fallback time.Duration) *int32 {
		d, err := time.ParseDuration(np.Annotations[annotation])
		if err != nil || d <= 0 {
			d = fallback
		}
		return ptr.To(int32(d.Seconds()))
	}
	timeout := duration(MachineHealthCheckTimeoutAnnotation, defaultHealthCheckTimeout)
	maxUnhealthy := defaultHealthCheckMaxUnhealth
	if v, ok := np.Annotations[MachineHealthCheckMaxUnhealthyAnnotation]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			maxUnhealthy = intstr.FromInt(n)
		} else if len(v) > 1 && v[len(v)-1] == '%' {
			if _, err := strconv.Atoi(v[:len(v)-1]); err == nil {
				maxUnhealthy = intstr.FromString(v)
			}
		}
	}
	return &clusterv1.MachineHealthCheck{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineHealthCheck"},
		ObjectMeta: in.meta(np.Name),
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: in.cluster,
			Selector:    metav1.LabelSelector{MatchLabels: in.poolLabels()},
			Checks: clusterv1.MachineHealthCheckChecks{
				NodeStartupTimeoutSeconds: duration(MachineHealthCheckNodeStartupTimeoutAnnotation, defaultNodeStartupTimeout),
				UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
					{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: timeout},
					{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: timeout},
				},
			},
			Remediation: clusterv1.MachineHealthCheckRemediation{
				TriggerIf: clusterv1.MachineHealthCheckRemediationTriggerIf{UnhealthyLessThanOrEqualTo: &maxUnhealthy},
			},
		},
	}
}
