package localcluster

import "sigs.k8s.io/controller-runtime/pkg/client"

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
