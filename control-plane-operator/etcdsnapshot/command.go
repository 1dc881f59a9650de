package etcdsnapshot

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/zapr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/hypershift-le/hypershift/support/startup"
)

// CommandName is the command's name.
const CommandName = "etcd-snapshot"

// NewCommand returns `control-plane-operator etcd-snapshot` and its
// subcommands serve, receive and restore.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   CommandName,
		Short: "Back up a hosted cluster's etcd, and restore a new cluster's etcd from the backup",
		Long: `Move an etcd snapshot between two pods over HTTPS: serve takes a snapshot of an
etcd member (or checks a backup file) and serves it; receive writes it to a
backup file; restore makes a new member's data directory from it. Both sides
mount the transfer Secret (tls.crt, tls.key, token): the client accepts the
server's certificate only when it is that tls.crt, and the server requires the
token. Each command writes the snapshot's info as JSON to its termination
message on success, and a one-line reason on failure.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newServeCommand(), newReceiveCommand(), newRestoreCommand())
	return cmd
}

// commonFlags are the flags of every subcommand.
type commonFlags struct {
	transferDir     string
	terminationPath string
	logging         *crzap.Options
}

func (c *commonFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&c.transferDir, "transfer-dir", DefaultTransferDir, "Where the transfer Secret is mounted: "+TransferCertKey+", "+TransferKeyKey+" (serve only) and "+TransferTokenKey+".")
	fs.StringVar(&c.terminationPath, "termination-message-path", DefaultTerminationMessagePath, "Where to write the snapshot's info as JSON on success, or the reason on failure; nothing is written when its directory does not exist.")
	c.logging = startup.LoggingFlags(fs)
}

// run runs a subcommand with a logger in its context that ends on SIGTERM
// or SIGINT, and writes its outcome to the termination message and, on
// success, the snapshot's info to standard output.
func (c *commonFlags) run(cmd *cobra.Command, do func(ctx context.Context, lg *zap.Logger) (Info, error)) error {
	lg := crzap.NewRaw(crzap.UseFlagOptions(c.logging))
	defer func() { _ = lg.Sync() }()
	log := zapr.NewLogger(lg).WithName(CommandName + "-" + cmd.Name())
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	info, err := do(ctrl.LoggerInto(ctx, log), lg)
	if writeErr := writeTerminationMessage(c.terminationPath, info, err); writeErr != nil {
		log.Error(writeErr, "Failed to write the termination message")
	}
	if err != nil {
		return err
	}
	out, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("failed to encode the snapshot's info: %w", err)
	}
	_, _ = fmt.Fprintln(cmd.OutOrStdout(), string(out))
	return nil
}

// serveFlags are serve's own flags.
type serveFlags struct {
	commonFlags
	source       etcdSource
	file         string
	expectSHA256 string
	workDir      string
	listen       string
	downloads    int
}

func newServeCommand() *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Take a snapshot of an etcd member, or check a backup file, and serve it until downloaded",
		Long: `Take a snapshot of the etcd member at --etcd-endpoint into --work-dir, or check
the backup --file against --expect-sha256 and the sha256 etcd appended to it,
then serve it over HTTPS at ` + SnapshotPath + ` (with the transfer Secret's certificate,
to requests carrying its token) until it was downloaded --downloads times.
` + HealthzPath + ` answers once the snapshot is ready; nothing listens before.`,
		Example: "  control-plane-operator etcd-snapshot serve --etcd-endpoint=https://10.0.0.5:2379 --etcd-server-name=etcd-client --etcd-tls-dir=/etc/etcd/client\n" +
			"  control-plane-operator etcd-snapshot serve --file=/backup/demo.db --expect-sha256=<hex> --downloads=3",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, f.serve) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.source.Endpoint, "etcd-endpoint", "", "The client URL of the etcd member to take a snapshot of (https://IP:2379).")
	fs.StringVar(&f.source.ServerName, "etcd-server-name", "", "The name etcd's serving certificate is checked against; the endpoint's host when empty.")
	fs.StringVar(&f.source.TLSDir, "etcd-tls-dir", "", "A directory with ca.crt (etcd's CA) and tls.crt and tls.key (a client certificate etcd accepts).")
	fs.StringVar(&f.file, "file", "", "A snapshot file to serve instead: a backup.")
	fs.StringVar(&f.expectSHA256, "expect-sha256", "", "The hex sha256 the backup recorded for --file; the file is not served unless it matches.")
	fs.StringVar(&f.workDir, "work-dir", os.TempDir(), "Where the snapshot of --etcd-endpoint is written (an emptyDir large enough for etcd's database).")
	fs.StringVar(&f.listen, "listen", fmt.Sprintf(":%d", TransferPort), "The address to serve the snapshot on.")
	fs.IntVar(&f.downloads, "downloads", 1, "How many complete downloads to serve before exiting.")
	f.add(fs)
	return cmd
}

func (f *serveFlags) serve(ctx context.Context, lg *zap.Logger) (Info, error) {
	if err := f.validate(); err != nil {
		return Info{}, err
	}
	tr, err := loadTransfer(f.transferDir, true)
	if err != nil {
		return Info{}, err
	}
	path := f.file
	var info Info
	if f.file != "" {
		info, err = inspectFile(f.file, f.expectSHA256)
	} else {
		path, info, err = takeSnapshot(ctx, lg.Named("etcd-client"), f.source, f.workDir)
		if path != "" {
			defer func() { _ = os.Remove(path) }()
		}
	}
	if err != nil {
		return Info{}, err
	}
	return info, serveSnapshot(ctx, f.listen, tr, path, info, f.downloads)
}

func (f *serveFlags) validate() error {
	fromEtcd, fromFile := f.source.Endpoint != "", f.file != ""
	switch {
	case fromEtcd == fromFile:
		return errors.New("give exactly one source: --etcd-endpoint (with --etcd-tls-dir) to take a snapshot, or --file (with --expect-sha256) to serve a backup")
	case fromEtcd && f.source.TLSDir == "":
		return errors.New("--etcd-tls-dir is required with --etcd-endpoint")
	case fromFile && f.expectSHA256 == "":
		return errors.New("--expect-sha256 is required with --file: a backup is served only once checked")
	case fromFile && !isSHA256(f.expectSHA256):
		return fmt.Errorf("--expect-sha256 %q is not a hex sha256", f.expectSHA256)
	case f.downloads < 1:
		return fmt.Errorf("--downloads must be at least 1, not %d", f.downloads)
	}
	f.expectSHA256 = strings.ToLower(f.expectSHA256)
	return nil
}

// isSHA256 tells whether s is a sha256 in hex.
func isSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32
}
