// Package auditlogs is `control-plane-operator audit-logs`, the
// kube-apiserver pod's audit-logs container: it copies the audit log the
// kube-apiserver writes into their shared volume to its standard output,
// so that `kubectl logs <pod> -c audit-logs` shows it, as `tail -F` would
// in an image that has a shell (ours have none). It follows the file by
// name across the kube-apiserver's rotations, and copies whole lines only.
package auditlogs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// CommandName is the subcommand's name.
const CommandName = "audit-logs"

// NewCommand returns `control-plane-operator audit-logs`.
func NewCommand() *cobra.Command {
	var path string
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   CommandName,
		Short: "Copy the kube-apiserver's audit log to standard output, following it across rotations",
		Long: `Copy the file --path to standard output from its beginning, then every line
appended to it, until SIGTERM. When the file is rotated (renamed, and a new one
created in its place) or truncated, the rest of the old file is copied, then the
new one from its beginning. A file that does not exist yet is waited for.`,
		Example: "  control-plane-operator audit-logs --path=/var/log/kube-apiserver/audit.log",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return Follow(ctx, path, cmd.OutOrStdout(), poll)
		},
	}
	cmd.Flags().StringVar(&path, "path", "/var/log/kube-apiserver/audit.log", "The file to follow.")
	cmd.Flags().DurationVar(&poll, "poll-interval", time.Second, "How often the file is checked for new lines and rotation.")
	return cmd
}

// Follow copies the lines of the file at path to w, then the lines
// appended to it, following path across rotations and truncations, until
// ctx ends; it then copies what was written meanwhile and returns nil. It
// checks for new lines every poll.
func Follow(ctx context.Context, path string, w io.Writer, poll time.Duration) error {
	f := &follower{path: path, w: w}
	defer f.close()
	for {
		if err := f.step(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return f.step()
		case <-time.After(poll):
		}
	}
}

// follower is the state of Follow: the open file, how far it was read,
// and the start of a line not ended yet.
type follower struct {
	path    string
	w       io.Writer
	file    *os.File
	offset  int64
	partial []byte
}

// step copies every whole line written since the last step, from the
// file that was open and from the one now at the path.
func (f *follower) step() error {
	for {
		if f.file == nil {
			file, err := os.Open(f.path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("failed to open the audit log: %w", err)
			}
			f.file, f.offset, f.partial = file, 0, nil
		}
		if err := f.copyLines(); err != nil {
			return err
		}
		open, err := f.file.Stat()
		if err != nil {
			return fmt.Errorf("failed to inspect the audit log: %w", err)
		}
		current, err := os.Stat(f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Renamed, and the new file is not created yet.
			return nil
		case err != nil:
			return fmt.Errorf("failed to inspect the audit log: %w", err)
		case !os.SameFile(open, current):
			// Rotated: the old file is read to its end above; a line
			// left unended there will never end.
			f.close()
		case open.Size() < f.offset:
			// Truncated: read it again from its beginning.
			if _, err := f.file.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("failed to rewind the audit log: %w", err)
			}
			f.offset, f.partial = 0, nil
		default:
			return nil
		}
	}
}

// copyLines copies the open file's whole lines up to its end to w, and
// keeps the start of an unended line for the next step.
func (f *follower) copyLines() error {
	r := bufio.NewReaderSize(f.file, 64<<10)
	for {
		chunk, err := r.ReadBytes('\n')
		f.offset += int64(len(chunk))
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			line := chunk
			if len(f.partial) > 0 {
				line = append(f.partial, chunk...)
				f.partial = nil
			}
			if _, werr := f.w.Write(line); werr != nil {
				return fmt.Errorf("failed to write the audit log out: %w", werr)
			}
		} else {
			f.partial = append(f.partial, bytes.Clone(chunk)...)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to read the audit log: %w", err)
		}
	}
}

func (f *follower) close() {
	if f.file != nil {
		_ = f.file.Close()
		f.file, f.partial = nil, nil
	}
}
