package nodeagent

import (
	"net"
	"net/url"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// serviceBackends returns, for each TCP port of a Service, the addresses
// (ip:port) of its ready endpoints, in a stable order.
//
// The EndpointSlice API refuses loopback addresses, and every pod address
// here is one, so the endpointslice controller cannot publish this node's
// pods. For a Service with a selector the agent therefore derives the
// endpoints as that controller would: the pods of the namespace the
// selector matches, with an address, not finished, ready (or any, with
// publishNotReadyAddresses), on the target port (a number, or a container
// port's name). A Service without a selector uses its EndpointSlices; the
// `kubernetes` Service, whose loopback address the API server cannot
// publish either, goes to the API server the agent talks to.
func (a *Agent) serviceBackends(svc *corev1.Service, slices []*discoveryv1.EndpointSlice) map[corev1.ServicePort][]string {
	out := map[corev1.ServicePort][]string{}
	for _, port := range svc.Spec.Ports {
		if port.Protocol != "" && port.Protocol != corev1.ProtocolTCP {
			continue
		}
		var backends []string
		switch {
		case len(svc.Spec.Selector) > 0:
			backends = a.podBackends(svc, port)
		case svc.Namespace == metav1.NamespaceDefault && svc.Name == "kubernetes":
			backends = a.apiServerBackends()
		default:
			backends = sliceBackends(slices, port)
		}
		sort.Strings(backends)
		out[port] = backends
	}
	return out
}

func (a *Agent) podBackends(svc *corev1.Service, port corev1.ServicePort) []string {
	pods, err := a.lister.Pods(svc.Namespace).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return nil
	}
	var out []string
	for _, pod := range pods {
		if pod.Status.PodIP == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		ready := pod.DeletionTimestamp == nil && podReady(pod)
		if !ready && !svc.Spec.PublishNotReadyAddresses {
			continue
		}
		if target, ok := targetPort(pod, port); ok {
			out = append(out, net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(target))))
		}
	}
	return out
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort resolves a Service port's targetPort on a pod.
func targetPort(pod *corev1.Pod, port corev1.ServicePort) (int32, bool) {
	switch {
	case port.TargetPort.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == port.TargetPort.StrVal && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
					return p.ContainerPort, true
				}
			}
		}
		return 0, false
	case port.TargetPort.IntVal != 0:
		return port.TargetPort.IntVal, true
	}
	return port.Port, true
}

// sliceBackends reads the ready endpoints of a port from EndpointSlices:
// the slice port of the same name, endpoints whose ready condition is not
// false.
func sliceBackends(slices []*discoveryv1.EndpointSlice, port corev1.ServicePort) []string {
	var out []string
	for _, slice := range slices {
		if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		for _, p := range slice.Ports {
			if p.Port == nil || ptr.Deref(p.Name, "") != port.Name || ptr.Deref(p.Protocol, corev1.ProtocolTCP) != corev1.ProtocolTCP {
				continue
			}
			for _, ep := range slice.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				for _, addr := range ep.Addresses {
					out = append(out, net.JoinHostPort(addr, strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	return out
}

// apiServerBackends is the API server's address, from the agent's own
// configuration.
func (a *Agent) apiServerBackends() []string {
	u, err := url.Parse(a.cfg.RESTConfig.Host)
	if err != nil || u.Host == "" {
		return nil
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	return []string{host}
}
