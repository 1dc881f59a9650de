package nodeagent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// dataDirName is the symlink a volume's visible files point through, as
// with the kubelet: <volume>/<file> -> ..data/<file>, and ..data -> the
// current ..<timestamp> directory.
const dataDirName = "..data"

// fileProjection is one file of a volume: its content and mode.
type fileProjection struct {
	data []byte
	mode os.FileMode
}

// writeAtomically makes dir hold exactly payload (relative paths), the way
// the kubelet's AtomicWriter does: the files go into a fresh hidden
// directory, the ..data symlink is swapped to it with a rename, and each
// top-level name is a symlink through ..data. A reader therefore sees the
// old set of files or the new one, never a mix or a half-written file. It
// reports whether anything changed; an unchanged payload writes nothing.
func writeAtomically(dir string, payload map[string]fileProjection) (bool, error) {
	if err := validatePayload(payload); err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("failed to create %s: %w", dir, err)
	}
	dataLink := filepath.Join(dir, dataDirName)
	oldTarget, err := os.Readlink(dataLink)
	if err != nil && !os.IsNotExist(err) {
		return false, fmt.Errorf("failed to read %s: %w", dataLink, err)
	}
	if oldTarget != "" && sameContent(filepath.Join(dir, oldTarget), payload) {
		return false, nil
	}
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, fmt.Errorf("failed to create a data directory in %s: %w", dir, err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, fmt.Errorf("failed to set the mode of %s: %w", tsDir, err)
	}
	if err := writePayload(tsDir, payload); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, err
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("failed to link the new data: %w", err)
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("failed to swap the data link: %w", err)
	}
	if err := linkTopLevel(dir, payload); err != nil {
		return true, err
	}
	if oldTarget != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldTarget)); err != nil {
			return true, fmt.Errorf("failed to remove the old data: %w", err)
		}
	}
	return true, nil
}

// validatePayload refuses paths that are absolute, climb out, or start
// with "..", as the API validation of items does.
func validatePayload(payload map[string]fileProjection) error {
	for path := range payload {
		clean := filepath.Clean(path)
		if path == "" || filepath.IsAbs(path) || clean != path || strings.HasPrefix(path, "..") {
			return fmt.Errorf("invalid file path %q", path)
		}
	}
	return nil
}

func writePayload(dir string, payload map[string]fileProjection) error {
	for path, file := range payload {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("failed to create the directory of %s: %w", path, err)
		}
		if err := os.WriteFile(full, file.data, file.mode); err != nil {
			return fmt.Errorf("failed to write %s: %w", path, err)
		}
		// WriteFile's mode passes through the umask.
		if err := os.Chmod(full, file.mode); err != nil {
			return fmt.Errorf("failed to set the mode of %s: %w", path, err)
		}
	}
	return nil
}

// linkTopLevel points every top-level name of the payload through ..data
// and removes the links of names the payload no longer has.
func linkTopLevel(dir string, payload map[string]fileProjection) error {
	want := map[string]bool{}
	for path := range payload {
		want[strings.SplitN(path, string(filepath.Separator), 2)[0]] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("failed to list %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || want[e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("failed to remove the old link %s: %w", e.Name(), err)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		link := filepath.Join(dir, name)
		target := filepath.Join(dataDirName, name)
		if current, err := os.Readlink(link); err == nil && current == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return fmt.Errorf("failed to link %s: %w", name, err)
		}
	}
	return nil
}

// sameContent reports whether dir holds exactly payload's files, with the
// same contents and modes.
func sameContent(dir string, payload map[string]fileProjection) bool {
	count := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		want, ok := payload[rel]
		if !ok {
			return os.ErrExist
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if info.Mode().Perm() != want.mode.Perm() || !bytes.Equal(got, want.data) {
			return os.ErrExist
		}
		count++
		return nil
	})
	return err == nil && count == len(payload)
}
