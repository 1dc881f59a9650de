package images

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HostProgram is a program of this machine's Debian packages an image
// holds with what it runs on: its dynamic loader and shared libraries, as
// Debian-based images (distroless-iptables for kube-proxy) hold them.
type HostProgram struct {
	// Path is the program's file, at the same path in the image.
	Path string
	// Links are names, beside Path, that link to it: a multi-call
	// program's names (iptables-nft-multi is iptables, iptables-save...).
	Links []string
	// PluginDirs are directories whose shared objects the program loads
	// at run time (iptables' extensions), copied whole with what they need.
	PluginDirs []string
}

// IPTables is the iptables of the machine's iptables package (its nf_tables
// back end), under every name kube-proxy calls it by.
var IPTables = HostProgram{
	Path: "/usr/sbin/xtables-nft-multi",
	Links: []string{
		"iptables", "iptables-save", "iptables-restore",
		"ip6tables", "ip6tables-save", "ip6tables-restore",
	},
	PluginDirs: []string{"/usr/lib/x86_64-linux-gnu/xtables"},
}

// librarySearchPath is where the dynamic loader of this machine's packages
// finds shared libraries.
var librarySearchPath = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// hostFiles returns the files programs need in an image, by their path in
// it (without the leading /): each program, its plugins, its loader and
// the shared libraries all of them need, found by their ELF headers.
func hostFiles(programs []HostProgram) (map[string][]byte, map[string]string, error) {
	files := map[string][]byte{}
	links := map[string]string{}
	var queue []string
	add := func(path string) error {
		name := strings.TrimPrefix(filepath.Clean(path), "/")
		if _, ok := files[name]; ok {
			return nil
		}
		data, err := os.ReadFile(path) // follows symbolic links: the file's content under the name it is asked by
		if err != nil {
			return fmt.Errorf("failed to read %s (install its Debian package: make nodepkgs): %w", path, err)
		}
		files[name] = data
		queue = append(queue, path)
		return nil
	}
	for _, p := range programs {
		if err := add(p.Path); err != nil {
			return nil, nil, err
		}
		for _, link := range p.Links {
			links[strings.TrimPrefix(filepath.Join(filepath.Dir(p.Path), link), "/")] = filepath.Base(p.Path)
		}
		for _, dir := range p.PluginDirs {
			entries, err := os.ReadDir(dir)
			if err != nil {
				return nil, nil, fmt.Errorf("failed to read %s: %w", dir, err)
			}
			for _, e := range entries {
				// Symbolic links too: an extension is often another's
				// name (libxt_MASQUERADE.so is libxt_NAT.so).
				if !e.IsDir() && strings.HasSuffix(e.Name(), ".so") {
					if err := add(filepath.Join(dir, e.Name())); err != nil {
						return nil, nil, err
					}
				}
			}
		}
	}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		needed, err := elfNeeds(path)
		if err != nil {
			return nil, nil, err
		}
		for _, lib := range needed {
			found, err := findLibrary(lib)
			if err != nil {
				return nil, nil, fmt.Errorf("%s needs %s: %w", path, lib, err)
			}
			if err := add(found); err != nil {
				return nil, nil, err
			}
		}
	}
	return files, links, nil
}

// elfNeeds is what an ELF file needs to run: its interpreter (absolute)
// and the shared libraries it names (by soname).
func elfNeeds(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s is not an ELF file: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	var needs []string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			data := make([]byte, p.Filesz)
			if _, err := p.ReadAt(data, 0); err != nil {
				return nil, fmt.Errorf("failed to read the interpreter of %s: %w", path, err)
			}
			needs = append(needs, strings.TrimRight(string(data), "\x00"))
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("failed to read the libraries %s needs: %w", path, err)
	}
	return append(needs, libs...), nil
}

// findLibrary returns where the loader finds lib: itself when absolute.
func findLibrary(lib string) (string, error) {
	if filepath.IsAbs(lib) {
		return lib, nil
	}
	for _, dir := range librarySearchPath {
		path := filepath.Join(dir, lib)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("not found in %s", strings.Join(librarySearchPath, ", "))
}

// sortedKeys returns m's keys in order, for a layer that is the same for
// the same files.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
