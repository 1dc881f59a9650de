package nodeagent_test

import (
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestSchedulesAndRunsAPod(t *testing.T) {
	ns := env.Namespace(t)
	createPod(t, ns, "web", nil, httpsContainer("server", 8443))
	pod := waitRunningReady(t, ns, "web")

	if n := writes.count("POST", "/api/v1/namespaces/"+ns+"/pods/web/binding"); n != 1 {
		t.Errorf("the pod was bound through pods/binding %d times, want 1", n)
	}
	if pod.Spec.NodeName != nodeName {
		t.Errorf("the pod is bound to %q, want %q", pod.Spec.NodeName, nodeName)
	}
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil || !podPrefix.Contains(ip) {
		t.Errorf("podIP %q is not in %s", pod.Status.PodIP, podPrefix)
	}
	if got, ok := agent.PodIP(ns, "web"); !ok || got != pod.Status.PodIP {
		t.Errorf("agent.PodIP = %q, %v; status.podIP = %q", got, ok, pod.Status.PodIP)
	}
	if len(pod.Status.PodIPs) != 1 || pod.Status.PodIPs[0].IP != pod.Status.PodIP || pod.Status.HostIP != "127.0.0.1" || pod.Status.StartTime == nil {
		t.Errorf("podIPs %v, hostIP %q, startTime %v", pod.Status.PodIPs, pod.Status.HostIP, pod.Status.StartTime)
	}
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		if !conditionTrue(pod, c) {
			t.Errorf("condition %s is not True: %+v", c, pod.Status.Conditions)
		}
	}
	pid, _ := agent.PodPID(ns, "web", "server")
	if len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses: %+v", pod.Status.ContainerStatuses)
	}
	cs := pod.Status.ContainerStatuses[0]
	if cs.Name != "server" || cs.Image != "https-server" || !cs.Ready || cs.Started == nil || !*cs.Started ||
		cs.State.Running == nil || cs.ContainerID != fmt.Sprintf("process://%d", pid) || cs.RestartCount != 0 {
		t.Errorf("container status %+v, pid %d", cs, pid)
	}
	code, _, err := get(fmt.Sprintf("https://%s:8443/healthz", pod.Status.PodIP))
	if err != nil || code != 200 {
		t.Errorf("the process does not serve on its pod's address: %d %v", code, err)
	}
	// Probes run every second; with nothing changing, nothing is written.
	rv, before := pod.ResourceVersion, writes.statusWrites(ns, "web")
	if before == 0 {
		t.Error("no status write of the pod was counted")
	}
	time.Sleep(3 * time.Second)
	if n := writes.statusWrites(ns, "web") - before; n != 0 {
		t.Errorf("the agent wrote the status %d times while nothing changed", n)
	}
	if pod, err = getPod(t, ns, "web"); err != nil || pod.ResourceVersion != rv {
		t.Errorf("the pod changed while nothing happened: resourceVersion %s -> %s (%v)", rv, pod.ResourceVersion, err)
	}
}

func TestEnvironmentAndExpansion(t *testing.T) {
	ns := env.Namespace(t)
	container := httpsContainer("server", 8443,
		"--name=$(MY_NAME)", "--where=$(MY_NAMESPACE)/$(MY_NODE)", "--escaped=$$(MY_NAME)", "--undefined=$(NOPE)",
		"--listen=:9443", "--bind=0.0.0.0:9444", "--kept=127.0.0.1:9445")
	container.Command = []string{"kube-apiserver"}
	container.Env = []corev1.EnvVar{
		{Name: "GREETING", Value: "hello"},
		{Name: "MY_NAME", ValueFrom: fieldRef("metadata.name")},
		{Name: "MY_NAMESPACE", ValueFrom: fieldRef("metadata.namespace")},
		{Name: "MY_UID", ValueFrom: fieldRef("metadata.uid")},
		{Name: "MY_IP", ValueFrom: fieldRef("status.podIP")},
		{Name: "MY_NODE", ValueFrom: fieldRef("spec.nodeName")},
		{Name: "MY_SA", ValueFrom: fieldRef("spec.serviceAccountName")},
		{Name: "COMPOSED", Value: "$(GREETING)-$(MY_NAME)"},
	}
	createServiceAccount(t, ns, "nobody")
	created := createPod(t, ns, "envy", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "nobody" }, container)
	pod := waitRunningReady(t, ns, "envy")
	ip := pod.Status.PodIP
	pid := waitPID(t, ns, "envy", "server")

	got := processEnv(t, pid)
	want := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": got["HOME"], "POD_IP": ip,
		"GREETING": "hello", "MY_NAME": "envy", "MY_NAMESPACE": ns, "MY_UID": string(created.UID), "MY_IP": ip,
		"MY_NODE": nodeName, "MY_SA": "nobody", "COMPOSED": "hello-envy",
	}
	// The `kubernetes` Service's variables, as the kubelet sets them.
	apiIP := kubernetesServiceIP(t)
	for name, value := range map[string]string{
		"SERVICE_HOST": apiIP, "SERVICE_PORT": "443", "SERVICE_PORT_HTTPS": "443",
		"PORT": "tcp://" + apiIP + ":443", "PORT_443_TCP": "tcp://" + apiIP + ":443",
		"PORT_443_TCP_PROTO": "tcp", "PORT_443_TCP_PORT": "443", "PORT_443_TCP_ADDR": apiIP,
	} {
		want["KUBERNETES_"+name] = value
	}
	if len(got) != len(want) {
		t.Errorf("the process's environment has %d variables, want %d: %v", len(got), len(want), got)
	}
	for name, value := range want {
		if got[name] != value {
			t.Errorf("$%s = %q, want %q", name, got[name], value)
		}
	}
	if !strings.HasPrefix(got["HOME"], stateDir) {
		t.Errorf("HOME %q is not under the state directory %s", got["HOME"], stateDir)
	}
	wantArgs := fmt.Sprintf(`args: "kube-apiserver" "--name=envy" "--where=%s/%s" "--escaped=$(MY_NAME)" "--undefined=$(NOPE)" "--listen=%s:9443" "--bind=%s:9444" "--kept=127.0.0.1:9445"`,
		ns, nodeName, ip, ip)
	log := logFile(ns, "envy", "server")
	if !strings.Contains(log, wantArgs) {
		t.Errorf("the log does not hold\n%s\nlog:\n%s", wantArgs, log)
	}
	if !strings.Contains(log, "--- started ") || !strings.Contains(log, fmt.Sprintf(" pid %d\n", pid)) {
		t.Errorf("the log has no start line for pid %d:\n%s", pid, log)
	}
}

func TestContainersThatCannotStart(t *testing.T) {
	ns := env.Namespace(t)
	badField := shellContainer("bad-field", "sleep 1000")
	badField.Env = []corev1.EnvVar{{Name: "LABELS", ValueFrom: fieldRef("metadata.labels['app']")}}
	unknown := corev1.Container{Name: "unknown", Image: "example.com/unknown:1"}
	createPod(t, ns, "broken", nil, badField, unknown)
	// Admission refuses a pod whose ServiceAccount is missing: this one is
	// gone by the time the pod may run.
	createServiceAccount(t, ns, "missing")
	createPod(t, ns, "no-account", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "missing"
		p.Spec.AutomountServiceAccountToken = nil
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/later"}}
	}, shellContainer("main", "sleep 1000"))
	if err := env.Client.Delete(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing"}}); err != nil {
		t.Fatal(err)
	}
	ungate(t, ns, "no-account")
	eventually(t, 30*time.Second, "a container waiting for its token", func() error {
		pod, err := getPod(t, ns, "no-account")
		if err != nil {
			return err
		}
		if cs := pod.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "FailedMount" ||
			!strings.Contains(cs[0].State.Waiting.Message, "failed to request a token for service account "+ns+"/missing") {
			return fmt.Errorf("containers %+v", cs)
		}
		return nil
	})
	eventually(t, 30*time.Second, "containers waiting with their reasons", func() error {
		pod, err := getPod(t, ns, "broken")
		if err != nil {
			return err
		}
		reasons := map[string]string{}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				reasons[cs.Name] = cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message
			}
		}
		if pod.Status.Phase != corev1.PodPending || !strings.HasPrefix(reasons["bad-field"], "CreateContainerConfigError: ") ||
			!strings.Contains(reasons["bad-field"], "metadata.labels") ||
			reasons["unknown"] != `ErrImagePull: image not found: no local program for image "example.com/unknown:1"` {
			return fmt.Errorf("phase %s, waiting %v", pod.Status.Phase, reasons)
		}
		return nil
	})
}

func TestRestartsAKilledContainer(t *testing.T) {
	ns := env.Namespace(t)
	createPod(t, ns, "phoenix", nil, httpsContainer("server", 8443))
	waitRunningReady(t, ns, "phoenix")
	pid := waitPID(t, ns, "phoenix", "server")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the container restarted and ready", func() error {
		pod, err := getPod(t, ns, "phoenix")
		if err != nil {
			return err
		}
		cs := pod.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount != 1 || cs.State.Running == nil || !cs.Ready || !conditionTrue(pod, corev1.PodReady) || last == nil || last.ExitCode != 137 {
			return fmt.Errorf("container status %+v", cs)
		}
		return nil
	})
	if newPID, ok := agent.PodPID(ns, "phoenix", "server"); !ok || newPID == pid {
		t.Errorf("the restarted container's pid is %d (%v), the killed one was %d", newPID, ok, pid)
	}
	if n := strings.Count(logFile(ns, "phoenix", "server"), "--- started "); n != 2 {
		t.Errorf("the log has %d start lines, want 2", n)
	}
}

func TestDeletionStopsTheProcessWithSIGTERM(t *testing.T) {
	ns := env.Namespace(t)
	createPod(t, ns, "polite", nil, httpsContainer("server", 8443))
	pod := waitRunningReady(t, ns, "polite")
	pid := waitPID(t, ns, "polite", "server")
	start := time.Now()
	if err := env.Client.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "polite", 20*time.Second)
	// The grace period is 30s: well before, the process left on SIGTERM.
	if elapsed := time.Since(start); elapsed > 15*time.Second {
		t.Errorf("the pod took %s to go", elapsed)
	}
	if !strings.Contains(logFile(ns, "polite", "server"), "received a termination signal") {
		t.Errorf("the process did not get SIGTERM; log:\n%s", logFile(ns, "polite", "server"))
	}
	if groupAlive(pid) {
		t.Errorf("process group %d is still alive", pid)
	}
	if _, ok := agent.PodIP(ns, "polite"); ok {
		t.Error("the agent still holds an address for the pod")
	}
}

func TestDeletionKillsAfterTheGracePeriod(t *testing.T) {
	ns := env.Namespace(t)
	createPod(t, ns, "stubborn", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(2)) },
		shellContainer("sleeper", `trap "" TERM; sleep 1000`))
	pod := waitRunningReady(t, ns, "stubborn")
	pid := waitPID(t, ns, "stubborn", "sleeper")
	start := time.Now()
	if err := env.Client.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "stubborn", 20*time.Second)
	if elapsed := time.Since(start); elapsed < 1800*time.Millisecond || elapsed > 10*time.Second {
		t.Errorf("the pod went after %s, want about its 2s grace period", elapsed)
	}
	if groupAlive(pid) {
		t.Errorf("process group %d (the shell and its sleep) is still alive", pid)
	}
	if log := logFile(ns, "stubborn", "sleeper"); !regexp.MustCompile(`--- exited .* code 137`).MatchString(log) {
		t.Errorf("the process was not killed:\n%s", log)
	}
}

func TestPodsOnTheSamePort(t *testing.T) {
	ns := env.Namespace(t)
	createPod(t, ns, "one", nil, httpsContainer("server", 6443))
	createPod(t, ns, "two", nil, httpsContainer("server", 6443))
	one, two := waitRunningReady(t, ns, "one"), waitRunningReady(t, ns, "two")
	if one.Status.PodIP == two.Status.PodIP {
		t.Fatalf("both pods got %s", one.Status.PodIP)
	}
	for _, pod := range []*corev1.Pod{one, two} {
		if code, _, err := get(fmt.Sprintf("https://%s:6443/readyz", pod.Status.PodIP)); err != nil || code != 200 {
			t.Errorf("pod %s does not serve: %d %v", pod.Name, code, err)
		}
	}
}

func TestRestartPolicies(t *testing.T) {
	ns := env.Namespace(t)
	never := func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }
	onFailure := func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }
	createPod(t, ns, "fails", never, shellContainer("main", "exit 3"))
	createPod(t, ns, "succeeds", onFailure, shellContainer("main", `[ -e "$HOME/again" ] && exit 0; touch "$HOME/again"; exit 1`))
	for name, want := range map[string]struct {
		phase    corev1.PodPhase
		code     int32
		restarts int32
	}{"fails": {corev1.PodFailed, 3, 0}, "succeeds": {corev1.PodSucceeded, 0, 1}} {
		eventually(t, 30*time.Second, "pod "+name+" "+string(want.phase), func() error {
			pod, err := getPod(t, ns, name)
			if err != nil {
				return err
			}
			cs := pod.Status.ContainerStatuses
			if pod.Status.Phase != want.phase || len(cs) != 1 || cs[0].State.Terminated == nil ||
				cs[0].State.Terminated.ExitCode != want.code || cs[0].RestartCount != want.restarts {
				return fmt.Errorf("phase %s, containers %+v", pod.Status.Phase, cs)
			}
			return nil
		})
	}
}

func TestLivenessFailureRestartsAndReadinessFailureUnreadies(t *testing.T) {
	ns := env.Namespace(t)
	closedPort := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(1)}},
		PeriodSeconds: 1, FailureThreshold: 2,
	}
	c := shellContainer("main", "sleep 1000")
	c.LivenessProbe, c.ReadinessProbe = closedPort, closedPort.DeepCopy()
	createPod(t, ns, "sick", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(1)) }, c)
	eventually(t, 30*time.Second, "the container restarted after failed liveness probes", func() error {
		pod, err := getPod(t, ns, "sick")
		if err != nil {
			return err
		}
		if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].RestartCount < 1 {
			return fmt.Errorf("containers %+v", pod.Status.ContainerStatuses)
		}
		if conditionTrue(pod, corev1.PodReady) || pod.Status.ContainerStatuses[0].Ready {
			return fmt.Errorf("the pod is Ready though its readiness probe fails")
		}
		return nil
	})
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}
