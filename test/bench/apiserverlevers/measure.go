package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hypershift-le/hypershift/test/bench/report"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// The load: per namespace, ConfigMaps of 2 KiB, Secrets of 1 KiB and
// ServiceAccounts.
const (
	namespaces      = 10
	configMaps      = 20
	secrets         = 10
	serviceAccounts = 5
)

// result is one run's figures.
type result struct {
	lever lever
	// serving is the wall time from starting etcd and the API server to
	// its serving; cpu the API server's CPU time by then.
	serving, cpu time.Duration
	// objects created, watches held open.
	objects, watches int
	// rssAnon, rss and hwm are the API server's RssAnon, VmRSS and VmHWM
	// after the settle period, in bytes.
	rssAnon, rss, hwm int64
	// loadCPU is the API server's CPU time taking the load: opening the
	// watches, storing the objects and sending their events; idleCPU its
	// CPU time over the settle period, the load in place and its watches
	// open.
	loadCPU, idleCPU time.Duration
}

// measure starts an API server with lever l, loads it, and reads its
// memory after settle; it returns the machine line too.
func measure(ctx context.Context, l lever, settle time.Duration) (result, string, error) {
	r := result{lever: l}
	for k, v := range l.env {
		if err := os.Setenv(k, v); err != nil {
			return r, "", err
		}
	}
	defer func() {
		for k := range l.env {
			_ = os.Unsetenv(k)
		}
	}()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	begun := time.Now()
	env, err := testenv.Start(startCtx, testenv.Options{SkipCRDs: true, APIServerFlags: l.flags})
	cancel()
	if err != nil {
		return r, "", fmt.Errorf("the API server did not start: %w", err)
	}
	r.serving = time.Since(begun)
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "failed to stop the API server and etcd: %v\n", err)
		}
	}()
	proc, err := env.Process("kube-apiserver")
	if err != nil {
		return r, "", err
	}
	if r.cpu, err = report.ProcCPUTime(proc.Pid); err != nil {
		return r, "", err
	}
	machine := report.Machine(env)

	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	if r.watches, err = watchAll(loadCtx, cfg); err != nil {
		return r, "", err
	}
	if r.objects, err = createObjects(ctx, cfg); err != nil {
		return r, "", err
	}
	loaded, err := report.ProcCPUTime(proc.Pid)
	if err != nil {
		return r, "", err
	}
	r.loadCPU = loaded - r.cpu
	select {
	case <-ctx.Done():
		return r, "", ctx.Err()
	case <-time.After(settle):
	}
	settled, err := report.ProcCPUTime(proc.Pid)
	if err != nil {
		return r, "", err
	}
	r.idleCPU = settled - loaded
	sizes, err := report.ProcBytes(fmt.Sprintf("/proc/%d/status", proc.Pid), "RssAnon", "VmRSS", "VmHWM")
	if err != nil {
		return r, "", err
	}
	r.rssAnon, r.rss, r.hwm = sizes[0], sizes[1], sizes[2]
	return r, machine, nil
}

// watchAll opens a watch, over every namespace, on every resource the API
// server serves that can be listed and watched, in its preferred version,
// and drains them until ctx ends; it returns how many it opened.
func watchAll(ctx context.Context, cfg *rest.Config) (int, error) {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	lists, err := clientset.Discovery().ServerPreferredResources()
	if err != nil {
		return 0, fmt.Errorf("failed to discover the served resources: %w", err)
	}
	n := 0
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return 0, err
		}
		for _, res := range list.APIResources {
			if strings.Contains(res.Name, "/") || !hasVerbs(res.Verbs, "list", "watch") {
				continue
			}
			w, err := dyn.Resource(gv.WithResource(res.Name)).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, fmt.Errorf("failed to watch %s %s: %w", list.GroupVersion, res.Name, err)
			}
			n++
			go func() {
				defer w.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case _, ok := <-w.ResultChan():
						if !ok {
							return
						}
					}
				}
			}()
		}
	}
	return n, nil
}

func hasVerbs(verbs metav1.Verbs, want ...string) bool {
	for _, v := range want {
		if !slices.Contains(verbs, v) {
			return false
		}
	}
	return true
}

// createObjects makes the load's namespaces and objects, a namespace's at
// once, and returns how many objects it created.
func createObjects(ctx context.Context, cfg *rest.Config) (int, error) {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	data2k, data1k := strings.Repeat("x", 2048), []byte(strings.Repeat("y", 1024))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range namespaces {
		ns := fmt.Sprintf("load-%d", i)
		if _, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("failed to create namespace %s: %w", ns, err)
		}
		wg.Go(func() {
			var err error
			for j := range configMaps {
				if err == nil {
					_, err = clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", j)}, Data: map[string]string{"data": data2k}}, metav1.CreateOptions{})
				}
			}
			for j := range secrets {
				if err == nil {
					_, err = clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("secret-%d", j)}, Data: map[string][]byte{"data": data1k}}, metav1.CreateOptions{})
				}
			}
			for j := range serviceAccounts {
				if err == nil {
					_, err = clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sa-%d", j)}}, metav1.CreateOptions{})
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("failed to create the load's objects: %w", err)
	}
	return namespaces * (1 + configMaps + secrets + serviceAccounts), nil
}
