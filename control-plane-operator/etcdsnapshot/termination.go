package etcdsnapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultTerminationMessagePath is where Kubernetes reads a container's
// termination message by default.
const DefaultTerminationMessagePath = "/dev/termination-log"

// maxTerminationMessage is the most of a termination message Kubernetes
// keeps (4096 bytes per container).
const maxTerminationMessage = 4096

// writeTerminationMessage writes the outcome of a command to path: the
// snapshot's Info as JSON when err is nil, else err's message on one
// line. Outside a pod, where path's directory does not exist, it writes
// nothing.
func writeTerminationMessage(path string, info Info, err error) error {
	if _, statErr := os.Stat(filepath.Dir(path)); errors.Is(statErr, fs.ErrNotExist) {
		return nil
	}
	var message []byte
	if err == nil {
		var marshalErr error
		if message, marshalErr = json.Marshal(info); marshalErr != nil {
			return fmt.Errorf("failed to encode the snapshot's info: %w", marshalErr)
		}
	} else {
		message = []byte(oneLine(err.Error()))
	}
	if len(message) > maxTerminationMessage {
		message = message[:maxTerminationMessage]
	}
	if err := os.WriteFile(path, message, 0o644); err != nil {
		return fmt.Errorf("failed to write the termination message to %s: %w", path, err)
	}
	return nil
}

// oneLine joins the non-blank lines of s with "; ".
func oneLine(s string) string {
	var lines []string
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "; ")
}
