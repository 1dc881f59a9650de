package render

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// servicePort returns the port a component is served on, and whether it is
// served at all: only etcd and kube-apiserver are.
func servicePort(component string) (corev1.ServicePort, bool) {
	var name string
	var port int32
	switch component {
	case Etcd:
		name, port = etcdClientPortName, EtcdClientPort
	case KubeAPIServer:
		name, port = kubeAPIServerPortName, KubeAPIServerPort
	default:
		return corev1.ServicePort{}, false
	}
	return corev1.ServicePort{
		Name:       name,
		Protocol:   corev1.ProtocolTCP,
		Port:       port,
		TargetPort: intstr.FromString(name),
	}, true
}

// service is the ClusterIP Service in front of a served component's pods.
func service(in Inputs, component string, port corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: in.objectMeta(component),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector(component),
			Ports:    []corev1.ServicePort{port},
		},
	}
}
