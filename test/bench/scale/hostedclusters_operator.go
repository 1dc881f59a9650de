// Setting up the hypershift-operator for the hostedclusters part: its user
// and RBAC, its binary and process, the release payload it reads and
// whether the API server supports fencing.

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hyperv1 "github.com/hypershift-le/hypershift/api/hypershift/v1beta1"
	"github.com/hypershift-le/hypershift/hypershift-operator/controllers/hostedcluster"
	"github.com/hypershift-le/hypershift/hypershift-operator/rbac"
	"github.com/hypershift-le/hypershift/support/config"
	"github.com/hypershift-le/hypershift/support/leaderelection"
	"github.com/hypershift-le/hypershift/support/releaseinfo/releasetest"
	"github.com/hypershift-le/hypershift/test/testenv"
)

// startOperator creates the HO's namespace, user and RBAC, starts the HO
// (o.replicas of it, with o.shards) with its default settings otherwise,
// and waits until one holds its Lease, and every shard's Lease is held.
func (r *hcRun) startOperator(ctx context.Context, binary string, o hcOptions) (err error) {
	kubeconfigFlag, workers := o.kubeconfigFlag, o.workers
	r.replicas, r.shards = o.replicas, o.shards
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: operatorUser}}
	electionRole := rbac.LeaderElectionRole(operatorNamespace, r.shards)
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}},
		rbac.ClusterRole(),
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: operatorUser},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.HypershiftOperatorName},
			Subjects:   subjects,
		},
		electionRole,
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: operatorUser},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: electionRole.Name},
			Subjects:   subjects,
		},
	}
	for _, obj := range objects {
		if err := r.admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	if r.kubeconfig, err = r.env.AddUserKubeconfig(operatorUser); err != nil {
		return err
	}
	r.kubeconfigFlag = kubeconfigFlag
	r.workers = workers
	if r.workers == 0 {
		r.workers = config.DefaultMaxConcurrentReconciles
	}
	if out, err := exec.CommandContext(ctx, binary, "version").CombinedOutput(); err == nil {
		fmt.Printf("hypershift-operator: %s, %s\n", binary, strings.TrimSpace(string(out)))
	}
	r.operatorStarted = time.Now()
	if r.ho, r.metricsURL, err = r.launchOperator(binary, operatorPod, workers); err != nil {
		return err
	}
	r.election = electionDefaults(ctx, binary)
	if err := r.awaitLeases(ctx, []string{hyperv1.HypershiftOperatorLeaseName}, operatorPod); err != nil {
		return err
	}
	// The other replicas once the first leads, so that the HO's own Lease
	// (the fencing policy) stays with it, as the one-replica run has it.
	for i := 1; i < o.replicas; i++ {
		p, metricsURL, err := r.launchOperator(binary, fmt.Sprintf("%s-%d", operatorReplicaPrefix, i), workers)
		if err != nil {
			return err
		}
		r.others, r.otherMetrics = append(r.others, p), append(r.otherMetrics, metricsURL)
	}
	if r.shards > 1 {
		var shards []string
		for i := range r.shards {
			shards = append(shards, leaderelection.ShardLeaseName(hyperv1.HypershiftOperatorLeaseName, i))
		}
		if err := r.awaitLeases(ctx, shards, ""); err != nil {
			return err
		}
		// Held, and by every replica: the shards are handed over as the
		// replicas come.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			holders := map[string]int{}
			for _, name := range shards {
				lease := &coordinationv1.Lease{}
				if err := r.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, lease); err == nil {
					holders[ptr.Deref(lease.Spec.HolderIdentity, "")]++
				}
			}
			if len(holders) == min(o.replicas, r.shards) && holders[""] == 0 {
				fmt.Printf("hypershift-operator: %d shards held by %d replicas after %s: %v\n", r.shards, len(holders), time.Since(r.operatorStarted).Round(time.Millisecond), holders)
				return nil
			}
			if time.Now().After(deadline) {
				return r.withLog(fmt.Errorf("the %d shards were not spread over the %d replicas within 2m: held %v", r.shards, o.replicas, holders))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// operatorReplicaPrefix names the replicas beside the first
// (operatorPod): "<prefix>-<i>", apart from the failover's standby.
const operatorReplicaPrefix = "hypershift-operator-replica"

// awaitLeases waits until every Lease of names is held by holder, or by
// anyone when holder is "".
func (r *hcRun) awaitLeases(ctx context.Context, names []string, holder string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if done, exitErr := r.operatorExited(); done {
			return r.withLog(fmt.Errorf("the hypershift-operator exited at start: %w", exitStatus(exitErr)))
		}
		var missing error
		for _, name := range names {
			lease := &coordinationv1.Lease{}
			err := r.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, lease)
			if h := ptr.Deref(lease.Spec.HolderIdentity, ""); err == nil && (h == "" || (holder != "" && h != holder)) {
				err = fmt.Errorf("the holder of Lease %s is %q", name, h)
			}
			if err != nil {
				missing = err
				break
			}
		}
		if missing == nil {
			fmt.Printf("hypershift-operator: %d Leases held after %s\n", len(names), time.Since(r.operatorStarted).Round(time.Millisecond))
			return nil
		}
		if time.Now().After(deadline) {
			return r.withLog(fmt.Errorf("the hypershift-operator did not take its Leases within 2m: %w", missing))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// launchOperator starts one HO replica as pod (its POD_NAME, so its
// Lease identity), with workers as --max-concurrent-reconciles (0: its
// default), and returns it with its metrics endpoint.
func (r *hcRun) launchOperator(binary, pod string, workers int) (*process, string, error) {
	metricsAddr, err := freeAddress()
	if err != nil {
		return nil, "", err
	}
	healthAddr, err := freeAddress()
	if err != nil {
		return nil, "", err
	}
	args := []string{"run",
		"--namespace=" + operatorNamespace,
		"--metrics-bind-address=" + metricsAddr,
		"--metrics-secure=false", // scraped here over plain HTTP
		"--health-probe-bind-address=" + healthAddr,
	}
	if workers > 0 {
		args = append(args, fmt.Sprintf("--max-concurrent-reconciles=%d", workers))
	}
	if r.shards > 1 {
		args = append(args, fmt.Sprintf("--shards=%d", r.shards))
	}
	environ := []string{"POD_NAME=" + pod}
	if r.kubeconfigFlag {
		args = append(args, "--kubeconfig="+r.kubeconfig)
	} else {
		// As in a pod: no --kubeconfig, so controller-runtime loads the
		// config and turns client-side rate limiting off.
		environ = append(environ, "KUBECONFIG="+r.kubeconfig)
	}
	p, err := startProcess(pod, binary, args, environ, filepath.Join(r.logDir, pod+".log"))
	if err != nil {
		return nil, "", err
	}
	fmt.Printf("hypershift-operator %s: pid %d, %s, log %s\n", pod, p.PID(), strings.Join(args, " "), p.logPath)
	return p, "http://" + metricsAddr + "/metrics", nil
}

// pushRelease pushes a release payload whose hypershift component (the CPO
// image) is on the same registry, and returns its pull spec.
func pushRelease(ctx context.Context, host string) (string, error) {
	files, err := releasetest.BuildReleaseFiles(releaseVersion, map[string]string{
		hostedcluster.ControlPlaneOperatorImageTag: host + "/hypershift:" + releaseVersion,
	})
	if err != nil {
		return "", err
	}
	img, err := releasetest.BuildImage(files)
	if err != nil {
		return "", err
	}
	ref := host + "/ocp-release:" + releaseVersion
	if _, err := releasetest.Push(ctx, ref, img, nil); err != nil {
		return "", err
	}
	return ref, nil
}

// operatorBinary returns the HO binary to run: path when set, else
// bin/hypershift-operator (which `make bench-scale` builds first) unless it
// is missing or older than the source, else one built from the source now;
// and a function that removes what it built.
func operatorBinary(path string) (string, func(), error) {
	if path != "" {
		return path, func() {}, nil
	}
	root, err := testenv.RepositoryRoot()
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(root, "bin", "hypershift-operator")
	info, err := os.Stat(path)
	switch {
	case err != nil:
		fmt.Printf("%s is missing: building the hypershift-operator from the source\n", path)
	case newerSource(root, info.ModTime()) != "":
		fmt.Printf("%s is older than %s: building the hypershift-operator from the source\n", path, newerSource(root, info.ModTime()))
	default:
		return path, func() {}, nil
	}
	return testenv.BuildBinary("github.com/hypershift-le/hypershift/hypershift-operator")
}

// newerSource returns a Go file of the HO's module modified after t, if any.
func newerSource(root string, t time.Time) string {
	var newer string
	for _, dir := range []string{"api", "hypershift-operator", "support"} {
		_ = filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || newer != "" || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			if info, err := d.Info(); err == nil && info.ModTime().After(t) {
				newer = path
			}
			return nil
		})
	}
	return newer
}

// electionDefaults returns the defaults of the HO's own --leader-elect-*
// flags, from the binary's help: "lease-duration 1m0s, ...".
func electionDefaults(ctx context.Context, binary string) string {
	out, err := exec.CommandContext(ctx, binary, "run", "--help").Output()
	if err != nil {
		return "unknown"
	}
	var found []string
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name, ok := strings.CutPrefix(fields[0], "--leader-elect-")
		i := strings.LastIndex(line, "(default ")
		if !ok || i < 0 {
			continue
		}
		found = append(found, name+" "+strings.TrimSuffix(line[i+len("(default "):], ")"))
	}
	return strings.Join(found, ", ")
}

// operators are every HO replica of the run.
func (r *hcRun) operators() []*process { return append([]*process{r.ho}, r.others...) }

// operatorCPU is the CPU time of every replica.
func (r *hcRun) operatorCPU() (time.Duration, error) {
	var sum time.Duration
	for _, p := range r.operators() {
		cpu, err := p.cpuTime()
		if err != nil {
			return 0, err
		}
		sum += cpu
	}
	return sum, nil
}

// operatorExited reports whether a replica exited, and how.
func (r *hcRun) operatorExited() (bool, error) {
	for _, p := range r.operators() {
		if done, err := p.exited(); done {
			return true, err
		}
	}
	return false, nil
}

// scrapeOperators reads every replica's metrics, the series of the same
// name and labels summed: the shards' queues are spread over them.
func (r *hcRun) scrapeOperators() (map[string]float64, error) {
	all := map[string]float64{}
	for _, url := range append([]string{r.metricsURL}, r.otherMetrics...) {
		m, err := scrapeMetrics(url)
		if err != nil {
			return nil, err
		}
		for series, v := range m {
			all[series] += v
		}
	}
	return all, nil
}

// stopOthers stops the replicas beside the first.
func (r *hcRun) stopOthers() {
	for _, p := range r.others {
		if err := p.Stop(30 * time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "the hypershift-operator replica exited with %v when stopped\n", err)
		}
	}
	r.others, r.otherMetrics = nil, nil
}

// hcQueue and hcController select the HostedCluster controller's series in
// the HO's metrics: "hostedcluster", or "hostedcluster-shard-<i>" with
// --shards.
const (
	hcQueue      = `name="hostedcluster`
	hcController = `controller="hostedcluster`
)
