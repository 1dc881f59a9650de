package localcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hypershift-le/hypershift/hack/images"
	"github.com/hypershift-le/hypershift/support/apply"
	"github.com/hypershift-le/hypershift/test/internal/pods"
)

const (
	// ClusterDNS is the kube-dns Service's ClusterIP, which every pod is
	// given as its DNS server: CoreDNS, serving cluster.local.
	ClusterDNS = "198.18.128.10"
	// LocalPathStorageClass is the default StorageClass: node-local
	// volumes made by the local-path provisioner of the node a claim's
	// first pod is scheduled to.
	LocalPathStorageClass = "local-path"
	// LocalPathProvisioner is its provisioner's name.
	LocalPathProvisioner = "hypershift.local/local-path"

	addonsNamespace  = "kube-system"
	storageNamespace = "local-path-storage"
	fieldOwner       = "localcluster"
)

// addonImages are the images of the add-ons and the pods' sandboxes, built
// like the product's (package images) from binaries in BinDir.
var addonImages = map[string]images.Spec{
	"pause:latest":                  images.Pause,
	"coredns:latest":                {Programs: []string{"coredns"}, Entrypoint: []string{"/usr/bin/coredns"}},
	"local-path-provisioner:latest": {Programs: []string{"local-path-provisioner"}, Entrypoint: []string{"/usr/bin/local-path-provisioner"}},
}

// corefile serves cluster.local from the API; nothing else (the nodes have
// no upstream resolver). CoreDNS runs as a user that may not bind port 53:
// the kube-dns Service maps 53 to 1053.
const corefile = `.:1053 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
    reload
}
`

// addons are what the nodes serve the cluster with: CoreDNS behind the
// kube-dns Service, and the local-path provisioner on every node with the
// default StorageClass.
func (c *Cluster) addons() []client.Object {
	return append(c.coreDNS(), c.localPath()...)
}

func (c *Cluster) coreDNS() []client.Object {
	labels := map[string]string{"k8s-app": "kube-dns"}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: addonsNamespace, Name: name} }
	container := corev1.Container{
		Name: "coredns", Image: c.Registry.Image("coredns", "latest"),
		Args: []string{"-conf", "/etc/coredns/Corefile"},
		Ports: []corev1.ContainerPort{
			{Name: "dns", ContainerPort: 1053, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", ContainerPort: 1053, Protocol: corev1.ProtocolTCP},
		},
		VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181)}}, PeriodSeconds: 2},
		LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}}, InitialDelaySeconds: 10},
		Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta("coredns")},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "localcluster:coredns"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		}},
		clusterRoleBinding("localcluster:coredns", addonsNamespace, "coredns"),
		&corev1.ConfigMap{ObjectMeta: meta("coredns"), Data: map[string]string{"Corefile": corefile}},
		&appsv1.Deployment{ObjectMeta: meta("coredns"), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				ServiceAccountName: "coredns",
				PriorityClassName:  "system-cluster-critical",
				DNSPolicy:          corev1.DNSDefault,
				Containers:         []corev1.Container{container},
				Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
				}}}},
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
					MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
					LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
				}},
			}},
		}},
		&corev1.Service{ObjectMeta: meta("kube-dns"), Spec: corev1.ServiceSpec{
			ClusterIP: ClusterDNS, Selector: labels,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(1053), Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", Port: 53, TargetPort: intstr.FromInt32(1053), Protocol: corev1.ProtocolTCP},
			},
		}},
	}
}

// volumesDir is where the nodes' volumes are, one directory per node: in
// the state, so that a kept state keeps them (the nodes' own directories
// go when they stop).
func (c *Cluster) volumesDir() string { return filepath.Join(c.opts.StateDir, "volumes") }

func (c *Cluster) localPath() []client.Object {
	labels := map[string]string{"app": "local-path-provisioner"}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: storageNamespace, Name: name} }
	return []client.Object{
		// It mounts a host directory: a privileged namespace of its own.
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: storageNamespace, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}},
		&corev1.ServiceAccount{ObjectMeta: meta("local-path-provisioner")},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "localcluster:local-path-provisioner"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		}},
		clusterRoleBinding("localcluster:local-path-provisioner", storageNamespace, "local-path-provisioner"),
		&appsv1.DaemonSet{ObjectMeta: meta("local-path-provisioner"), Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				ServiceAccountName: "local-path-provisioner",
				PriorityClassName:  "system-node-critical",
				Containers: []corev1.Container{{
					Name: "provisioner", Image: c.Registry.Image("local-path-provisioner", "latest"),
					Args: []string{
						"--provisioner-name=" + LocalPathProvisioner,
						"--dir=/volumes/$(NODE_NAME)",
						"--host-dir=" + c.volumesDir() + "/$(NODE_NAME)",
					},
					Env:          []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "volumes", MountPath: "/volumes"}},
					Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
					// Root: it makes directories for any user in a
					// directory of root's.
					SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To(int64(0)), RunAsNonRoot: ptr.To(false)},
				}},
				Volumes: []corev1.Volume{{Name: "volumes", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: c.volumesDir(), Type: ptr.To(corev1.HostPathDirectoryOrCreate),
				}}}},
			}},
		}},
		&storagev1.StorageClass{
			ObjectMeta:        metav1.ObjectMeta{Name: LocalPathStorageClass, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner:       LocalPathProvisioner,
			ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		},
	}
}

func clusterRoleBinding(name, namespace, serviceAccount string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: namespace, Name: serviceAccount}},
	}
}

// apply applies objects with server-side apply, as this cluster's own
// (support/apply: no request for an object already as desired, which a
// kept state's restart finds).
func (c *Cluster) apply(ctx context.Context, objects ...client.Object) error {
	applier := apply.Applier{Client: c.Env.Client, FieldOwner: fieldOwner}
	for _, obj := range objects {
		if _, err := applier.Apply(ctx, obj); err != nil {
			return fmt.Errorf("failed to apply %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}

// awaitAddons waits until CoreDNS serves and every node runs its
// provisioner; otherwise it says which pods are not ready and why.
func (c *Cluster) awaitAddons(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := c.addonsReady(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the cluster's add-ons are not ready after 2m: %w%s", err, c.podProblems(ctx, addonsNamespace, storageNamespace))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (c *Cluster) addonsReady(ctx context.Context) error {
	dns := &appsv1.Deployment{}
	if err := c.Env.Client.Get(ctx, client.ObjectKey{Namespace: addonsNamespace, Name: "coredns"}, dns); err != nil {
		return err
	}
	if dns.Status.AvailableReplicas < 1 {
		return errors.New("no CoreDNS replica is available")
	}
	provisioner := &appsv1.DaemonSet{}
	if err := c.Env.Client.Get(ctx, client.ObjectKey{Namespace: storageNamespace, Name: "local-path-provisioner"}, provisioner); err != nil {
		return err
	}
	if provisioner.Status.NumberReady != int32(c.opts.Nodes) {
		return fmt.Errorf("the local-path provisioner is ready on %d of %d nodes", provisioner.Status.NumberReady, c.opts.Nodes)
	}
	return nil
}

// podProblems lists the pods of namespaces that are not ready, with their
// containers' states.
func (c *Cluster) podProblems(ctx context.Context, namespaces ...string) string {
	out := ""
	for _, ns := range namespaces {
		list := &corev1.PodList{}
		if err := c.Env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			continue
		}
		for _, pod := range list.Items {
			if pods.Ready(&pod) {
				continue
			}
			out += fmt.Sprintf("\n  pod %s/%s on %q: %s", ns, pod.Name, pod.Spec.NodeName, pod.Status.Phase)
			for _, cs := range pod.Status.ContainerStatuses {
				switch {
				case cs.State.Waiting != nil:
					out += fmt.Sprintf("; %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
				case cs.State.Terminated != nil:
					out += fmt.Sprintf("; %s terminated: %s %s", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.Message)
				}
			}
			for _, cond := range pod.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status != corev1.ConditionTrue {
					out += "; not scheduled: " + cond.Message
				}
			}
		}
	}
	return out
}
