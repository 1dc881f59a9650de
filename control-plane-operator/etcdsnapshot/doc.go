// Package etcdsnapshot is `control-plane-operator etcd-snapshot`: it backs
// up a hosted cluster's etcd and restores a new cluster's etcd from the
// backup, in Go, since the images have no shell.
//
// A snapshot moves between two pods, usually in different namespaces, over
// HTTPS:
//
//   - `serve` takes a snapshot of one etcd member (as `etcdctl snapshot save`
//     does) or checks an existing snapshot file, then serves it at
//     SnapshotPath on TransferPort until it was downloaded --downloads times
//     (serve.go, source.go, file.go).
//   - `receive` downloads it into a backup file that is never rewritten
//     (fetch.go).
//   - `restore`, the init container of every etcd member of a cluster created
//     from a backup, downloads it next to the member's data directory and
//     restores it there (as `etcdutl snapshot restore` does), unless the member
//     already has data (restore.go).
//
// Both pods mount a transfer Secret (transfer.go): a self-signed certificate
// that the server presents and the client pins (it accepts that
// certificate only, without a hostname check, since it dials a Service's
// ClusterIP), and a bearer token the server requires. The snapshot's
// sha256, revision and size travel as response headers, and the client
// checks the body against them.
//
// Every command writes its outcome to the container's termination message
// (termination.go): the snapshot's Info as JSON on success, a one-line
// message on failure, which the operator copies into a status condition.
package etcdsnapshot
