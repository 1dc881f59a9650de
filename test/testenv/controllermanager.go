package testenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

// controllerManagerControllers are the kube-controller-manager controllers
// the test control plane runs when asked: namespace deletion and garbage
// collection, so that teardown is the real one.
var controllerManagerControllers = []string{"namespace-controller", "garbage-collector-controller"}

// nodeCertificateControllers sign and approve nodes' certificates and clean
// up after them (Options.NodeCertificates).
var nodeCertificateControllers = []string{
	"certificatesigningrequest-signing-controller", "certificatesigningrequest-approving-controller",
	"certificatesigningrequest-cleaner-controller", "token-cleaner-controller",
}

// startControllerManager runs kube-controller-manager as cluster admin
// against the test API server, with no serving port and no election;
// flags replace its arguments of the same names.
func (e *Env) startControllerManager(assets string, controllers []string, flags map[string]string) error {
	if len(controllers) == 0 {
		controllers = controllerManagerControllers
	}
	kubeconfig := filepath.Join(e.tempDir, "controller-manager.kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	caFile := filepath.Join(e.tempDir, "ca.crt")
	if err := os.WriteFile(caFile, e.Config.CAData, 0o600); err != nil {
		return fmt.Errorf("failed to write the cluster CA: %w", err)
	}
	var signing []string
	if e.nodeCertificates {
		certDir := e.env.ControlPlane.APIServer.CertDir
		controllers = append(slices.Clone(controllers), nodeCertificateControllers...)
		for _, signer := range []string{"kubelet-client", "kubelet-serving"} {
			signing = append(signing,
				"--cluster-signing-"+signer+"-cert-file="+filepath.Join(certDir, caCertFile),
				"--cluster-signing-"+signer+"-key-file="+filepath.Join(certDir, caKeyFile))
		}
	}
	stop, err := e.startComponent(assets, "kube-controller-manager", withFlags(append([]string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		// The service account token controller signs with the API server's key.
		"--service-account-private-key-file=" + filepath.Join(e.env.ControlPlane.APIServer.CertDir, "sa-signer.key"),
		"--root-ca-file=" + caFile,
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--concurrent-namespace-syncs=5",
		"--concurrent-gc-syncs=5",
	}, signing...), flags)...)
	e.stopControllerManager = stop
	return err
}

// StartControllerManager starts kube-controller-manager once the
// environment runs, as Options.ControllerManager would have at its start,
// with flags in place of its own of the same names: for measures of the
// API server alone first. Env.Stop stops it.
func (e *Env) StartControllerManager(flags map[string]string) error {
	if e.stopControllerManager != nil {
		return errors.New("kube-controller-manager already runs")
	}
	return e.startControllerManager(e.env.BinaryAssetsDirectory, nil, flags)
}

// withFlags returns args with flags (by name without the dashes) in place
// of the arguments of the same names: a repeated list flag would add to
// the first, not replace it.
func withFlags(args []string, flags map[string]string) []string {
	names := slices.Sorted(maps.Keys(flags))
	args = slices.DeleteFunc(slices.Clone(args), func(arg string) bool {
		return slices.ContainsFunc(names, func(name string) bool { return strings.HasPrefix(arg, "--"+name+"=") })
	})
	for _, name := range names {
		args = append(args, "--"+name+"="+flags[name])
	}
	return args
}

// startScheduler runs kube-scheduler as cluster admin against the test API
// server, with no serving port and no election.
func (e *Env) startScheduler(assets string) error {
	kubeconfig := filepath.Join(e.tempDir, "scheduler.kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	stop, err := e.startComponent(assets, "kube-scheduler",
		"--kubeconfig="+kubeconfig,
		// Without these the scheduler asks the API server who may
		// authenticate to it, and serves nothing anyway.
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	)
	e.stopScheduler = stop
	return err
}

// startComponent starts program of assets with args, its output in the
// environment's directory (see ComponentLog), dying with this process. It
// returns how to stop it, and fails when the program exits within 2s.
func (e *Env) startComponent(assets, program string, args ...string) (func() error, error) {
	binary := filepath.Join(assets, program)
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("%s is missing (%w): run `make testbin`", binary, err)
	}
	logFile, err := os.Create(filepath.Join(e.tempDir, program+".log"))
	if err != nil {
		return nil, fmt.Errorf("failed to create the log of %s: %w", program, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("failed to start %s: %w", program, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); _ = logFile.Close(); close(exited) }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		return nil
	}
	// It must not die at start (bad flags, missing binary dependencies).
	select {
	case <-exited:
		log, _ := os.ReadFile(logFile.Name())
		return nil, errors.Join(fmt.Errorf("%s exited at start: %w", program, waitErr), errors.New(operatorprocess.Tail(string(log), 2000)))
	case <-time.After(2 * time.Second):
	}
	return stop, nil
}

// ControllerManagerLog returns the controller manager's log so far.
func (e *Env) ControllerManagerLog(ctx context.Context) string {
	return e.ComponentLog(ctx, "kube-controller-manager")
}

// ComponentLog returns the log so far of a component the environment runs
// (kube-controller-manager, kube-scheduler).
func (e *Env) ComponentLog(_ context.Context, program string) string {
	raw, _ := os.ReadFile(filepath.Join(e.tempDir, program+".log"))
	return string(raw)
}
