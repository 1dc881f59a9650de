package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

	"github.com/hypershift-le/hypershift/control-plane-operator/components/kubecontrollermanager"
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

// programs are the processes measured, in the report's order.
var programs = []string{"kube-apiserver", "etcd", "kube-controller-manager"}

// controllerManagerFlags are kube-controller-manager's flags as a hosted
// cluster's runs with (control-plane-operator's kubecontrollermanager),
// where they differ from the test environment's: its controllers, each
// controller with its own ServiceAccount's credentials, and the default
// concurrencies. Its cluster signer is left out: no certificate is signed.
var controllerManagerFlags = map[string]string{
	"controllers":                     kubecontrollermanager.Controllers,
	"use-service-account-credentials": "true",
	"concurrent-namespace-syncs":      "10",
	"concurrent-gc-syncs":             "20",
}

// usage is one process's figures after the settle period.
type usage struct {
	// rssAnon, rss and hwm are its RssAnon, VmRSS and VmHWM, in bytes.
	rssAnon, rss, hwm int64
	// loadCPU is its CPU time taking the load: opening the watches,
	// storing the objects and sending their events, acting on them;
	// idleCPU its CPU time over the settle period, the load in place and
	// the watches open.
	loadCPU, idleCPU time.Duration
}

// result is one run's figures.
type result struct {
	lever lever
	// serving is the wall time from starting etcd and the API server to
	// its serving; cpu the API server's CPU time by then.
	serving, cpu time.Duration
	// objects created, watches held open.
	objects, watches int
	// usage is each program's, by name.
	usage map[string]usage
}

// measure starts a control plane with lever l, loads it, and reads its
// processes' memory after settle; it returns the machine line too.
func measure(ctx context.Context, l lever, settle time.Duration) (result, string, error) {
	r := result{lever: l, usage: map[string]usage{}}
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
	env, err := testenv.Start(startCtx, testenv.Options{SkipCRDs: true, APIServerFlags: l.apiServerFlags, EtcdFlags: l.etcdFlags})
	cancel()
	if err != nil {
		return r, "", fmt.Errorf("the API server did not start: %w", err)
	}
	r.serving = time.Since(begun)
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "failed to stop the control plane: %v\n", err)
		}
	}()
	apiServer, err := env.Process("kube-apiserver")
	if err != nil {
		return r, "", err
	}
	if r.cpu, err = report.ProcCPUTime(apiServer.Pid); err != nil {
		return r, "", err
	}
	machine := report.Machine(env)
	if err := env.StartControllerManager(merged(controllerManagerFlags, l.controllerManagerFlags)); err != nil {
		return r, "", err
	}
	pids := map[string]int{}
	for _, program := range programs {
		p, err := env.Process(program)
		if err != nil {
			return r, "", err
		}
		pids[program] = p.Pid
	}
	cpuTimes := func() (map[string]time.Duration, error) {
		times := map[string]time.Duration{}
		for program, pid := range pids {
			t, err := report.ProcCPUTime(pid)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", program, err)
			}
			times[program] = t
		}
		return times, nil
	}
	before, err := cpuTimes()
	if err != nil {
		return r, "", err
	}

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
	loaded, err := cpuTimes()
	if err != nil {
		return r, "", err
	}
	select {
	case <-ctx.Done():
		return r, "", ctx.Err()
	case <-time.After(settle):
	}
	settled, err := cpuTimes()
	if err != nil {
		return r, "", err
	}
	for program, pid := range pids {
		sizes, err := report.ProcBytes(fmt.Sprintf("/proc/%d/status", pid), "RssAnon", "VmRSS", "VmHWM")
		if err != nil {
			return r, "", fmt.Errorf("%s: %w", program, err)
		}
		r.usage[program] = usage{rssAnon: sizes[0], rss: sizes[1], hwm: sizes[2],
			loadCPU: loaded[program] - before[program], idleCPU: settled[program] - loaded[program]}
	}
	return r, machine, nil
}

// merged is base with over's entries in place of its own.
func merged(base, over map[string]string) map[string]string {
	m := maps.Clone(base)
	maps.Copy(m, over)
	return m
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
