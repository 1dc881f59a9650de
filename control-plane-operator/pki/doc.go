// Package pki decides, as pure functions of what exists and the time, the
// certificates, keys and kubeconfigs of one hosted control plane, and
// renders the Secrets that hold them.
//
// Two self-signed CAs sign everything: the root CA (Secret root-ca) signs
// the kube-apiserver's serving certificate and every client certificate of
// the hosted cluster (the controller manager's and the scheduler's
// kubeconfigs, the administrator's), and it is the cluster-signing CA of
// kube-controller-manager; the etcd signer (Secret etcd-signer) signs etcd's
// server and peer certificates and kube-apiserver's etcd client certificate.
// A service-account key pair signs the hosted cluster's tokens. An AES key,
// generated unless the user names keys of their own (spec.secretEncryption),
// encrypts the hosted cluster's Secrets in etcd: Plan keeps the
// kube-apiserver's encryption configuration (encryption.go), and refuses
// one without the key the Secrets are stored with.
//
// Plan reads the live Secrets and keeps everything that is still right,
// byte for byte, so that applying its result to a converged namespace sends
// nothing. It issues what is missing, and re-issues a leaf certificate when
// it does not parse or does not match its key, is not signed by the current
// CA, is not valid at the time given, has passed two thirds of its
// lifetime, or when its subject, names or usages must change. A CA is
// issued when its Secret does not exist and is never replaced: a CA Secret
// that holds no usable CA is an error for a human to resolve. Plan says why
// it wrote each Secret, for an event.
package pki
