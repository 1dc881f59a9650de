package boot

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// reaper waits for every child of the machine: its own processes, whose
// exit it reports to them, and the orphans it inherits as its Pod's PID 1,
// as an init does (containerd's shims, whose parent exits, are reparented
// to it), which it only reaps. One loop waits for any child, so no exit is
// taken from under another's wait.
type reaper struct {
	mu      sync.Mutex
	own     map[int]*process
	signals chan os.Signal
}

// newReaper starts reaping: from its return on, no child's exit is missed.
func newReaper() *reaper {
	r := &reaper{own: map[int]*process{}, signals: make(chan os.Signal, 16)}
	signal.Notify(r.signals, syscall.SIGCHLD)
	go r.run()
	return r
}

// start starts p's command: its exit closes p.done. The reaper waits for
// it (not cmd.Wait), so it is registered before it can exit.
func (r *reaper) start(p *process) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := p.cmd.Start(); err != nil {
		return err
	}
	r.own[p.cmd.Process.Pid] = p
	return nil
}

// run reaps children until the process ends.
func (r *reaper) run() {
	for range r.signals {
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			r.mu.Lock()
			p := r.own[pid]
			delete(r.own, pid)
			r.mu.Unlock()
			if p != nil {
				p.exited(status)
			}
		}
	}
}
