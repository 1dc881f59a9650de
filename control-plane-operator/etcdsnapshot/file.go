package etcdsnapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// integrityHashSize is the size of the sha256 that etcd appends to the
// database in every snapshot it sends (etcd's maintenance Snapshot RPC);
// `etcdutl snapshot restore` checks it unless told to skip the check.
const integrityHashSize = sha256.Size

// hasIntegrityHash tells whether a file of size bytes ends with that hash:
// etcd's database is a whole number of 512-byte sectors, so a snapshot's
// size is 32 past a multiple of 512 (etcdutl's own test).
func hasIntegrityHash(size int64) bool {
	return size%512 == integrityHashSize
}

// inspectFile reads the snapshot at path once and returns its Info (no
// Member): its size, its sha256, and the revision it holds. It fails when
// the file is not an etcd snapshot, or when the database in it does not
// match the hash etcd appended to it: corruption is reported before anyone
// fetches the file. When expectSHA256 is set, the file's sha256 must be
// that too.
func inspectFile(path, expectSHA256 string) (Info, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("snapshot %s does not exist", path)
	}
	if err != nil {
		return Info{}, fmt.Errorf("failed to open snapshot: %w", err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return Info{}, fmt.Errorf("failed to stat snapshot: %w", err)
	}
	size := st.Size()
	whole, db := sha256.New(), sha256.New()
	appended := make([]byte, integrityHashSize)
	if hasIntegrityHash(size) {
		if _, err := io.Copy(io.MultiWriter(whole, db), io.LimitReader(f, size-integrityHashSize)); err != nil {
			return Info{}, fmt.Errorf("failed to read snapshot %s: %w", path, err)
		}
		if _, err := io.ReadFull(f, appended); err != nil {
			return Info{}, fmt.Errorf("failed to read snapshot %s: %w", path, err)
		}
		whole.Write(appended)
	} else if _, err := io.Copy(whole, f); err != nil {
		return Info{}, fmt.Errorf("failed to read snapshot %s: %w", path, err)
	}
	info := Info{Size: size, SHA256: hex.EncodeToString(whole.Sum(nil))}
	if expectSHA256 != "" && info.SHA256 != expectSHA256 {
		return Info{}, fmt.Errorf("snapshot %s is corrupt: its sha256 is %s, the backup recorded %s", path, info.SHA256, expectSHA256)
	}
	if !hasIntegrityHash(size) {
		return Info{}, fmt.Errorf("%s is not an etcd snapshot: its size (%d bytes) is not 32 bytes past a multiple of 512, so it does not end with the sha256 etcd appends to every snapshot", path, size)
	}
	if computed := db.Sum(nil); !bytes.Equal(computed, appended) {
		return Info{}, fmt.Errorf("snapshot %s is corrupt: the sha256 of its database is %x, etcd recorded %x when it took the snapshot", path, computed, appended)
	}
	if info.Revision, err = snapshotRevision(path); err != nil {
		return Info{}, err
	}
	return info, nil
}

// snapshotRevision returns the revision a member restored from the
// snapshot at path starts at, computed as etcd does when it opens its
// database (mvcc's store.restore): the newest revision in the key bucket,
// or the last (finished or scheduled) compaction when that is newer, since
// a compaction may have removed the newest revisions' tombstones.
func snapshotRevision(path string) (int64, error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return 0, fmt.Errorf("%s is not an etcd snapshot: failed to open its database: %w", path, err)
	}
	defer func() { _ = db.Close() }()
	var revision int64
	err = db.View(func(tx *bolt.Tx) error {
		keys := tx.Bucket(schema.Key.Name())
		if keys == nil {
			return fmt.Errorf("%s is not an etcd snapshot: its database has no %q bucket", path, schema.Key.Name())
		}
		if k, _ := keys.Cursor().Last(); k != nil {
			revision = mainRevision(k)
		}
		if meta := tx.Bucket(schema.Meta.Name()); meta != nil {
			for _, name := range [][]byte{schema.FinishedCompactKeyName, schema.ScheduledCompactKeyName} {
				revision = max(revision, mainRevision(meta.Get(name)))
			}
		}
		return nil
	})
	return revision, err
}

// mainRevision decodes the main revision of one of mvcc's revision keys
// (8 bytes big-endian main, '_', 8 bytes sub, an optional tombstone mark),
// or 0 when b is not one.
func mainRevision(b []byte) int64 {
	if len(b) < 17 || b[8] != '_' {
		return 0
	}
	return max(int64(binary.BigEndian.Uint64(b[:8])), 0)
}
