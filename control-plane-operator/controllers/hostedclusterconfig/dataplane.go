package hostedclusterconfig

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/support/hostednetwork"
)

// The release payload's images of what runs on the hosted cluster's
// nodes, by their tag in it.
const (
	KubeProxyImageTag = "kube-proxy"
	CoreDNSImageTag   = "coredns"
)

// DataPlaneInputs are what the hosted cluster's node-side objects derive
// from.
type DataPlaneInputs struct {
	HostedControlPlane *hyperv1.HostedControlPlane
	// KubeProxyImage and CoreDNSImage are the release payload's.
	KubeProxyImage, CoreDNSImage string
	// PodNetworkImage is the release payload's pod network of machines
	// of platform Pod; none when the payload names none.
	PodNetworkImage string
}

// DataPlane are what the hosted cluster's nodes need to be useful, in the
// order they are applied: the `kubernetes` Service's endpoint (the
// kube-apiserver runs outside the hosted cluster, where the nodes reach it
// at the published endpoint, so it reconciles no endpoint of its own);
// kube-proxy on every node, which reaches the kube-apiserver there too;
// and CoreDNS behind the kube-dns Service at the cluster's DNS address
// (hostednetwork.DNSAddress, which the NodePools' kubelets are given);
// the pod network of the machines of platform Pod (podnetwork.go).
func DataPlane(in DataPlaneInputs) ([]client.Object, error) {
	hcp := in.HostedControlPlane
	endpoint := hcp.Status.ControlPlaneEndpoint
	if endpoint == nil || endpoint.Host == "" || endpoint.Port == 0 {
		return nil, fmt.Errorf("the kube-apiserver's endpoint is not published yet")
	}
	dns, err := hostednetwork.DNSAddress(hcp.Spec.Networking.ServiceNetwork)
	if err != nil {
		return nil, err
	}
	var objects []client.Object
	// A DNS name cannot be the `kubernetes` Service's endpoint (kube-proxy
	// forwards to addresses), nor may a loopback address (the API server
	// refuses it, and no node reaches another's): pods then reach the API
	// by the endpoint itself only.
	if addr, err := netip.ParseAddr(endpoint.Host); err == nil && !addr.IsLoopback() && !addr.IsLinkLocalUnicast() {
		objects = append(objects, kubernetesEndpoint(addr, endpoint.Port))
	}
	objects = append(objects, kubeProxy(in, endpoint)...)
	objects = append(objects, coreDNS(in.CoreDNSImage, dns)...)
	podNetwork, err := podNetwork(in, endpoint)
	if err != nil {
		return nil, err
	}
	return append(objects, podNetwork...), nil
}

func meta(namespace, name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{managedByLabel: FieldOwner}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: l}
}

// kubernetesEndpoint is the EndpointSlice of the `kubernetes` Service, as
// the kube-apiserver's own endpoint reconciler writes it.
func kubernetesEndpoint(addr netip.Addr, port int32) *discoveryv1.EndpointSlice {
	addressType := discoveryv1.AddressTypeIPv4
	if addr.Is6() {
		addressType = discoveryv1.AddressTypeIPv6
	}
	return &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: discoveryv1.SchemeGroupVersion.String(), Kind: "EndpointSlice"},
		ObjectMeta: meta(metav1.NamespaceDefault, "kubernetes", map[string]string{
			discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: FieldOwner,
		}),
		AddressType: addressType,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

const (
	kubeProxyName   = "kube-proxy"
	kubeProxyConfig = "/var/lib/kube-proxy"
	// serviceAccountDir is where a pod's service account token and the
	// cluster's CA are mounted.
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// kubeProxy runs kube-proxy on every node, in the node's network (iptables
// mode), with a kubeconfig that reaches the kube-apiserver at its published
// endpoint with the pod's service account token: the `kubernetes` Service
// works only once kube-proxy does. It leaves the machine's conntrack
// sysctls alone and judges traffic local by the node's pod subnet.
func kubeProxy(in DataPlaneInputs, endpoint *hyperv1.APIEndpoint) []client.Object {
	labels := map[string]string{"k8s-app": kubeProxyName}
	ns := metav1.NamespaceSystem
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s/kubeconfig.conf
mode: iptables
detectLocalMode: NodeCIDR
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeProxyConfig)
	hostPath := func(name, path string, t corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
	}
	ds := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "DaemonSet"},
		ObjectMeta: meta(ns, kubeProxyName, labels),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType,
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: kubeProxyName,
					HostNetwork:        true,
					PriorityClassName:  "system-node-critical",
					// Every node, whatever its taints: Services work nowhere
					// without it.
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:    kubeProxyName,
						Image:   in.KubeProxyImage,
						Command: []string{"/usr/bin/kube-proxy", "--config=" + kubeProxyConfig + "/config.conf", "--hostname-override=$(NODE_NAME)"},
						Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"},
						}}},
						// It programs the node's iptables: root, privileged.
						SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To(int64(0)), RunAsNonRoot: ptr.To(false)},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
						}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: kubeProxyConfig, ReadOnly: true},
							{Name: "xtables-lock", MountPath: "/run/xtables.lock"},
							{Name: "lib-modules", MountPath: "/lib/modules", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: kubeProxyName},
						}}},
						hostPath("xtables-lock", "/run/xtables.lock", corev1.HostPathFileOrCreate),
						hostPath("lib-modules", "/lib/modules", corev1.HostPathDirectoryOrCreate),
					},
				},
			},
		},
	}
	return []client.Object{
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(ns, kubeProxyName, labels)},
		serviceAccountBinding("hypershift:kube-proxy", "system:node-proxier", ns, kubeProxyName),
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: meta(ns, kubeProxyName, labels),
			Data:       map[string]string{"config.conf": config, "kubeconfig.conf": endpointKubeconfig(endpoint, kubeProxyName)},
		},
		ds,
	}
}

const coreDNSName = "coredns"

// coreDNSPort is where CoreDNS listens, as the user it runs as may bind
// no port below 1024; the kube-dns Service maps 53 to it.
const coreDNSPort = 1053

// corefile serves the cluster's domain from its API; nothing else: the
// hosted cluster is given no upstream resolver.
var corefile = fmt.Sprintf(`.:%d {
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
`, coreDNSPort)

// coreDNS runs two CoreDNS replicas behind the kube-dns Service at dns.
func coreDNS(image string, dns netip.Addr) []client.Object {
	labels := map[string]string{"k8s-app": "kube-dns"}
	ns := metav1.NamespaceSystem
	probe := func(path string, port int) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt(port)}}, PeriodSeconds: 5}
	}
	deployment := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: meta(ns, coreDNSName, labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt(1)), MaxSurge: ptr.To(intstr.FromInt(0)),
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: coreDNSName,
					PriorityClassName:  "system-cluster-critical",
					Tolerations:        []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}},
					SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
					Containers: []corev1.Container{{
						Name:  coreDNSName,
						Image: image,
						Args:  []string{"-conf", "/etc/coredns/Corefile"},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: coreDNSPort, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: coreDNSPort, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: probe("/ready", 8181),
						LivenessProbe:  probe("/health", 8080),
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
						}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: coreDNSName},
					}}}},
				},
			},
		},
	}
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: meta("", "hypershift:coredns", nil),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	service := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(ns, "kube-dns", labels),
		Spec: corev1.ServiceSpec{
			ClusterIP: dns.String(),
			Selector:  labels,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, TargetPort: intstr.FromInt(coreDNSPort), Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", Port: 53, TargetPort: intstr.FromInt(coreDNSPort), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	return []client.Object{
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(ns, coreDNSName, labels)},
		role,
		serviceAccountBinding("hypershift:coredns", role.Name, ns, coreDNSName),
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(ns, coreDNSName, labels), Data: map[string]string{"Corefile": corefile}},
		service,
		deployment,
	}
}

// endpointKubeconfig reaches the kube-apiserver at its published endpoint
// as the pod's service account (its token and the cluster's CA, mounted):
// what node-side pods use before Services work.
func endpointKubeconfig(endpoint *hyperv1.APIEndpoint, user string) string {
	server := "https://" + net.JoinHostPort(endpoint.Host, strconv.Itoa(int(endpoint.Port)))
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: hosted
  cluster:
    server: %s
    certificate-authority: %s/ca.crt
users:
- name: %s
  user:
    tokenFile: %s/token
contexts:
- name: %s
  context: {cluster: hosted, user: %s}
current-context: %s
`, server, serviceAccountDir, user, serviceAccountDir, user, user, user)
}

// serviceAccountBinding binds ClusterRole role to a service account.
func serviceAccountBinding(name, role, namespace, serviceAccount string) *rbacv1.ClusterRoleBinding {
	return binding(name, role, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: serviceAccount})
}
