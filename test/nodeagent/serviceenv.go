package nodeagent

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// serviceEnv returns the variables the kubelet derives from Services: those
// of the `kubernetes` Service in the default namespace always (so that
// rest.InClusterConfig finds KUBERNETES_SERVICE_HOST and _PORT), and those
// of every Service of the pod's namespace unless enableServiceLinks is
// false. Services without a ClusterIP give none. Names are sorted.
func (a *Agent) serviceEnv(pod *corev1.Pod) []corev1.EnvVar {
	byName := map[string]*corev1.Service{}
	if svc, err := a.services.Services(metav1.NamespaceDefault).Get("kubernetes"); err == nil {
		byName[svc.Name] = svc
	}
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		if list, err := a.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
			for _, svc := range list {
				if pod.Namespace == metav1.NamespaceDefault && svc.Name == "kubernetes" {
					continue
				}
				byName[svc.Name] = svc
			}
		}
	}
	names := make([]string, 0, len(byName))
	for name, svc := range byName {
		if hasClusterIP(svc) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []corev1.EnvVar
	for _, name := range names {
		out = append(out, serviceVars(byName[name])...)
	}
	return out
}

func hasClusterIP(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// serviceVars are one Service's variables, Docker-link style, as the
// kubelet makes them: NAME_SERVICE_HOST, NAME_SERVICE_PORT (first port),
// NAME_SERVICE_PORT_<PORT NAME>, NAME_PORT and NAME_PORT_<port>_<PROTO>...
func serviceVars(svc *corev1.Service) []corev1.EnvVar {
	prefix := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
	ip := svc.Spec.ClusterIP
	vars := []corev1.EnvVar{{Name: prefix + "_SERVICE_HOST", Value: ip}}
	if len(svc.Spec.Ports) == 0 {
		return vars
	}
	vars = append(vars, corev1.EnvVar{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(svc.Spec.Ports[0].Port))})
	for _, p := range svc.Spec.Ports {
		if p.Name != "" {
			name := prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))
			vars = append(vars, corev1.EnvVar{Name: name, Value: strconv.Itoa(int(p.Port))})
		}
	}
	first := svc.Spec.Ports[0]
	vars = append(vars, corev1.EnvVar{Name: prefix + "_PORT", Value: portURL(first, ip)})
	for _, p := range svc.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		base := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		vars = append(vars,
			corev1.EnvVar{Name: base, Value: portURL(p, ip)},
			corev1.EnvVar{Name: base + "_PROTO", Value: proto},
			corev1.EnvVar{Name: base + "_PORT", Value: strconv.Itoa(int(p.Port))},
			corev1.EnvVar{Name: base + "_ADDR", Value: ip},
		)
	}
	return vars
}

func portURL(p corev1.ServicePort, ip string) string {
	proto := strings.ToLower(string(p.Protocol))
	if proto == "" {
		proto = "tcp"
	}
	return proto + "://" + net.JoinHostPort(ip, strconv.Itoa(int(p.Port)))
}
