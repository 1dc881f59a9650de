package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	ctrl "sigs.k8s.io/controller-runtime"
)

// restoreOptions describe the member restore makes: the flags etcd itself
// starts the member with.
type restoreOptions struct {
	DataDir             string
	Name                string
	InitialCluster      string
	InitialClusterToken string
	PeerURLs            []string
}

// The files restore keeps next to the data directory, on the same volume,
// so that renaming them is atomic.
func (o restoreOptions) snapshotPath() string  { return o.DataDir + ".snapshot.db" }
func (o restoreOptions) restoringPath() string { return o.DataDir + ".restoring" }
func (o restoreOptions) memberPath() string    { return filepath.Join(o.DataDir, "member") }

// validate checks what etcdutl would refuse, before anything is
// downloaded (each download counts against what the server serves).
func (o restoreOptions) validate() error {
	cluster, err := types.NewURLsMap(o.InitialCluster)
	if err != nil {
		return fmt.Errorf("invalid --initial-cluster %q: %w", o.InitialCluster, err)
	}
	if _, ok := cluster[o.Name]; !ok {
		return fmt.Errorf("--name %q is not a member of --initial-cluster %q", o.Name, o.InitialCluster)
	}
	if _, err := types.NewURLs(o.PeerURLs); err != nil {
		return fmt.Errorf("invalid --initial-advertise-peer-urls %q: %w", o.PeerURLs, err)
	}
	if o.InitialClusterToken == "" {
		return errors.New("--initial-cluster-token is required: it must be the one etcd starts with")
	}
	return nil
}

// restoreMember makes the data directory of a member of a new cluster
// from the served snapshot, unless the data directory already holds a
// member: a member that restarts must never be rolled back. The snapshot
// is downloaded next to the data directory, restored into a temporary
// directory, and that is renamed to the data directory when complete, so
// a half-restored member is never seen there. A member that has data
// needs neither the server nor the transfer Secret: newFetcher is called
// only when there is something to restore.
func restoreMember(ctx context.Context, lg *zap.Logger, newFetcher func() (*fetcher, error), o restoreOptions) (Info, error) {
	log := ctrl.LoggerFrom(ctx)
	if _, err := os.Stat(o.memberPath()); err == nil {
		log.Info("Member data exists; nothing to restore", "dataDir", o.DataDir)
		removeLeftovers(ctx, o)
		return Info{Member: o.Name}, nil
	}
	if err := o.validate(); err != nil {
		return Info{}, err
	}
	if err := checkDataDirEmpty(o.DataDir); err != nil {
		return Info{}, err
	}
	info, err := localSnapshot(ctx, newFetcher, o.snapshotPath())
	if err != nil {
		return Info{}, err
	}
	info.Member = o.Name

	restoring := o.restoringPath()
	if err := os.RemoveAll(restoring); err != nil {
		return Info{}, fmt.Errorf("failed to remove %s, left by an earlier restore: %w", restoring, err)
	}
	log.Info("Restoring the snapshot", "snapshot", o.snapshotPath(), "into", restoring, "revision", info.Revision)
	err = snapshot.NewV3(lg.Named("etcdutl")).Restore(snapshot.RestoreConfig{
		SnapshotPath:        o.snapshotPath(),
		Name:                o.Name,
		OutputDataDir:       restoring,
		PeerURLs:            o.PeerURLs,
		InitialCluster:      o.InitialCluster,
		InitialClusterToken: o.InitialClusterToken,
	})
	if err != nil {
		return Info{}, fmt.Errorf("failed to restore snapshot %s for member %s: %w", o.snapshotPath(), o.Name, err)
	}
	if err := syncTree(restoring); err != nil {
		return Info{}, err
	}
	// An empty data directory is replaced by the rename (rename(2)).
	if err := os.Rename(restoring, o.DataDir); err != nil {
		return Info{}, fmt.Errorf("failed to rename %s to %s: %w", restoring, o.DataDir, err)
	}
	if err := syncDir(filepath.Dir(o.DataDir)); err != nil {
		return Info{}, err
	}
	log.Info("Restored the member", "dataDir", o.DataDir, "member", o.Name, "revision", info.Revision)
	removeLeftovers(ctx, o)
	return info, nil
}

// localSnapshot returns the Info of the snapshot at path, downloading it
// there first unless a download finished before a restart: the file gets
// its name only once it was received whole and checked, and the server
// may have served its last download since.
func localSnapshot(ctx context.Context, newFetcher func() (*fetcher, error), path string) (Info, error) {
	if _, err := os.Stat(path); err != nil {
		f, err := newFetcher()
		if err != nil {
			return Info{}, err
		}
		return f.fetch(ctx, path)
	}
	ctrl.LoggerFrom(ctx).Info("Using the snapshot downloaded before a restart", "path", path)
	info, err := inspectFile(path, "")
	if err != nil {
		return Info{}, fmt.Errorf("the snapshot downloaded before a restart does not check out (remove it to download it again): %w", err)
	}
	return info, nil
}

// checkDataDirEmpty fails when the data directory holds something, but
// no member: that is nothing restore may replace.
func checkDataDirEmpty(dataDir string) error {
	entries, err := os.ReadDir(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to read data directory %s: %w", dataDir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("data directory %s holds %d entries but no member directory; refusing to restore over them", dataDir, len(entries))
	}
	return nil
}

// removeLeftovers removes what a restore leaves next to the data
// directory: the snapshot, a partial download, a temporary directory. The
// member's data is complete by then, so a failure is only logged: it must
// not keep the member from starting, and the next start tries again.
func removeLeftovers(ctx context.Context, o restoreOptions) {
	log := ctrl.LoggerFrom(ctx)
	for _, path := range []string{o.snapshotPath(), o.snapshotPath() + ".partial", o.restoringPath()} {
		if err := os.RemoveAll(path); err != nil {
			log.Error(err, "Failed to remove what a restore left", "path", path)
		}
	}
	if err := syncDir(filepath.Dir(o.DataDir)); err != nil {
		log.Error(err, "Failed to fsync the data directory's parent")
	}
}

// syncTree fsyncs every file and directory under root.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("failed to open %s to fsync it: %w", path, err)
		}
		defer func() { _ = f.Close() }()
		if err := f.Sync(); err != nil {
			return fmt.Errorf("failed to fsync %s: %w", path, err)
		}
		return nil
	})
}
