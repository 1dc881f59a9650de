// Package components lists the hosted control plane's components: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler, each a
// package of its own that keeps the component contract.
package components

import (
	"github.com/hypershift-le/hypershift/control-plane-operator/component"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/etcd"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubeapiserver"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubecontrollermanager"
	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubescheduler"
)

// All returns every component, each after the components it depends on.
func All() []component.Component {
	ordered, err := component.Order([]component.Component{
		etcd.Component{}, kubeapiserver.Component{}, kubecontrollermanager.Component{}, kubescheduler.Component{},
	})
	if err != nil {
		// The list above is fixed: a cycle is a programming error that the
		// package's tests catch.
		panic(err)
	}
	return ordered
}
