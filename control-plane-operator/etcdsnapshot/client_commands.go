package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
)

// clientFlags are the flags of the subcommands that download a snapshot.
type clientFlags struct {
	commonFlags
	url     string
	timeout time.Duration
}

func (c *clientFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "The snapshot's URL: https://<serving pod's address>:8443"+SnapshotPath+". Empty: the transfer directory's "+TransferURLKey+" file says it.")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "How long to keep trying while the serving pod is not there yet, the download included.")
	c.commonFlags.add(fs)
}

// fetcher returns the fetcher the flags describe.
func (c *clientFlags) fetcher() (*fetcher, error) {
	t, err := loadTransfer(c.transferDir, false)
	if err != nil {
		return nil, err
	}
	url := c.url
	if url == "" {
		// The restore's URL is the serving pod's, known only once it runs:
		// in the Secret, so that the members' pod template does not change.
		raw, err := os.ReadFile(filepath.Join(c.transferDir, TransferURLKey))
		if err != nil {
			return nil, fmt.Errorf("no --url, and the transfer directory names none: %w", err)
		}
		url = strings.TrimSpace(string(raw))
	}
	return newFetcher(url, t, c.timeout)
}

func newReceiveCommand() *cobra.Command {
	f := &clientFlags{}
	var output string
	cmd := &cobra.Command{
		Use:   "receive",
		Short: "Download a served snapshot into a backup file",
		Long: `Download the snapshot at --url into --output, checked against the sha256 and
size the server announces, and fsynced, through --output.partial. An existing
--output is never overwritten: when it already holds the snapshot served, the
command succeeds without writing, else it fails. Connection errors and server
errors are retried until --timeout; a refused token is not.`,
		Example: "  control-plane-operator etcd-snapshot receive --url=https://10.0.0.7:8443/snapshot --output=/backup/demo.db",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, _ *zap.Logger) (Info, error) {
				if output == "" {
					return Info{}, errors.New("--output is required")
				}
				fetch, err := f.fetcher()
				if err != nil {
					return Info{}, err
				}
				return fetch.fetch(ctx, output)
			})
		},
	}
	cmd.Flags().StringVar(&output, "output", "", "The backup file to write, e.g. /backup/NAME.db.")
	f.add(cmd.Flags())
	return cmd
}

func newRestoreCommand() *cobra.Command {
	f := &clientFlags{}
	o := restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Make an etcd member's data directory from a served snapshot, unless it has one",
		Long: `The init container of every etcd member of a cluster created from a backup.
When --data-dir already holds a member, it does nothing (a restarted member is
never rolled back). Otherwise it downloads the snapshot at --url next to the
data directory (<data-dir>.snapshot.db), restores it with the member's etcd
flags into <data-dir>.restoring, checking etcd's integrity hash, and renames
that to --data-dir.`,
		Example: "  control-plane-operator etcd-snapshot restore --url=https://10.0.0.7:8443/snapshot --data-dir=/var/lib/etcd/data --name=etcd-0 \\\n" +
			"    --initial-cluster=etcd-0=https://etcd-0.etcd-discovery:2380 --initial-cluster-token=clusters-demo --initial-advertise-peer-urls=https://etcd-0.etcd-discovery:2380",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, lg *zap.Logger) (Info, error) {
				if o.DataDir == "" || o.Name == "" {
					return Info{}, errors.New("--data-dir and --name are required")
				}
				o.DataDir = filepath.Clean(o.DataDir)
				return restoreMember(ctx, lg, f.fetcher, o)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.DataDir, "data-dir", "", "The member's data directory, as etcd's --data-dir.")
	fs.StringVar(&o.Name, "name", "", "The member's name, as etcd's --name.")
	fs.StringVar(&o.InitialCluster, "initial-cluster", "", "As etcd's --initial-cluster: every member, name=peer URL, comma-separated.")
	fs.StringVar(&o.InitialClusterToken, "initial-cluster-token", "", "As etcd's --initial-cluster-token.")
	fs.StringSliceVar(&o.PeerURLs, "initial-advertise-peer-urls", nil, "As etcd's --initial-advertise-peer-urls: this member's peer URLs.")
	f.add(fs)
	return cmd
}
