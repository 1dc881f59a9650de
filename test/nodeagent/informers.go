package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// watch registers the agent's informers and handlers with factory and
// returns what must sync before the agent runs pods: pods, and the sources
// of their volumes and environment; the Services and EndpointSlices when
// it proxies; claims and volumes.
func (a *Agent) watch(ctx context.Context, factory informers.SharedInformerFactory) ([]cache.InformerSynced, error) {
	core := factory.Core().V1()
	pods := core.Pods()
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{pods.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { a.onPod(nil, obj) },
			UpdateFunc: a.onPod,
			DeleteFunc: a.onPodDelete,
		}},
		{core.Secrets().Informer(), a.sourceHandler()},
		{core.ConfigMaps().Informer(), a.sourceHandler()},
		{core.PersistentVolumeClaims().Informer(), a.sourceHandler()},
		{core.PersistentVolumes().Informer(), a.sourceHandler()},
		{core.Services().Informer(), nil},
	}
	var synced []cache.InformerSynced
	for _, h := range handlers {
		if h.handler != nil {
			if _, err := h.informer.AddEventHandler(h.handler); err != nil {
				return nil, fmt.Errorf("nodeagent: failed to watch: %w", err)
			}
		}
		synced = append(synced, h.informer.HasSynced)
	}
	a.mu.Lock()
	a.lister = pods.Lister()
	a.secrets, a.configMaps, a.services = core.Secrets().Lister(), core.ConfigMaps().Lister(), core.Services().Lister()
	a.claims, a.volumes = core.PersistentVolumeClaims().Lister(), core.PersistentVolumes().Lister()
	a.mu.Unlock()
	if a.cfg.ServiceProxy {
		proxySynced, err := a.startProxy(ctx, factory)
		if err != nil {
			return nil, err
		}
		synced = append(synced, proxySynced...)
	}
	if a.cfg.ProvisionVolumes {
		if err := a.startProvisioner(ctx, factory); err != nil {
			return nil, err
		}
	}
	return synced, nil
}

// sourceHandler tells the pods of an object's namespace (every pod, for a
// cluster-scoped object) that a source of their volumes changed.
func (a *Agent) sourceHandler() cache.ResourceEventHandler {
	notify := func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		meta, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, rt := range a.pods {
			if meta.GetNamespace() == "" || rt.namespace == meta.GetNamespace() {
				rt.sourcesChanged()
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
		DeleteFunc: notify,
	}
}

// removeStalePodDirs removes the directories of pods that are no longer
// bound to this node: pods deleted while the agent was not running.
func (a *Agent) removeStalePodDirs() {
	pods, err := a.lister.List(labels.Everything())
	if err != nil {
		return
	}
	live := map[types.UID]bool{}
	for _, pod := range pods {
		if pod.Spec.NodeName == a.cfg.NodeName {
			live[pod.UID] = true
		}
	}
	entries, err := os.ReadDir(a.podDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		// <namespace>_<name>_<uid>; neither a namespace nor a name holds "_".
		parts := strings.Split(e.Name(), "_")
		if len(parts) == 3 && live[types.UID(parts[2])] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(a.podDir, e.Name())); err != nil {
			a.log.Error(err, "Failed to remove the directory of a pod that is gone", "dir", e.Name())
		}
	}
}

// claimPath returns the directory backing a bound claim of the namespace:
// its PersistentVolume's hostPath or local path.
func (a *Agent) claimPath(namespace, name string) (string, error) {
	claim, err := a.claims.PersistentVolumeClaims(namespace).Get(name)
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %q not found", name)
	}
	if claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound", name)
	}
	pv, err := a.volumes.Get(claim.Spec.VolumeName)
	if err != nil {
		return "", fmt.Errorf("persistentvolume %q of claim %q not found", claim.Spec.VolumeName, name)
	}
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, nil
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, nil
	}
	return "", fmt.Errorf("persistentvolume %q of claim %q is neither hostPath nor local, which is all this node mounts", pv.Name, name)
}
