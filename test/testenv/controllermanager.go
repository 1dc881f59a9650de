package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hypershift-le/hypershift/test/operatorprocess"
)

// controllerManagerControllers are the kube-controller-manager controllers
// the test control plane runs when asked: namespace deletion and garbage
// collection, so that teardown is the real one.
var controllerManagerControllers = []string{"namespace-controller", "garbage-collector-controller"}

// startControllerManager runs kube-controller-manager as cluster admin
// against the test API server, with no serving port and no election.
func (e *Env) startControllerManager(assets string, controllers []string) error {
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
	binary := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(binary); err != nil {
		return fmt.Errorf("%s is missing (%w): run `make testbin`", binary, err)
	}
	logFile, err := os.Create(filepath.Join(e.tempDir, "kube-controller-manager.log"))
	if err != nil {
		return fmt.Errorf("failed to create the controller manager's log: %w", err)
	}
	cmd := exec.Command(binary,
		"--kubeconfig="+kubeconfig,
		"--controllers="+strings.Join(controllers, ","),
		// The service account token controller signs with the API server's key.
		"--service-account-private-key-file="+filepath.Join(e.env.ControlPlane.APIServer.CertDir, "sa-signer.key"),
		"--root-ca-file="+caFile,
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--concurrent-namespace-syncs=5",
		"--concurrent-gc-syncs=5",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("failed to start kube-controller-manager: %w", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); _ = logFile.Close(); close(exited) }()
	e.stopControllerManager = func() error {
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
		return errors.Join(fmt.Errorf("kube-controller-manager exited at start: %w", waitErr), errors.New(operatorprocess.Tail(string(log), 2000)))
	case <-time.After(2 * time.Second):
	}
	return nil
}

// ControllerManagerLog returns the controller manager's log so far.
func (e *Env) ControllerManagerLog(context.Context) string {
	raw, _ := os.ReadFile(filepath.Join(e.tempDir, "kube-controller-manager.log"))
	return string(raw)
}
