// Package nodeagent is a node agent that registers a Node and runs the Pods
// bound to it as local processes: the kubelet of a local cluster on a
// machine with no container runtime, and, when asked, its kube-proxy and
// a local-path volume provisioner too.
//
// # What a pod gets
//
// Scheduling: every Pod with no node is bound to the agent's node through
// pods/binding, as kube-scheduler would (there is no other scheduler).
//
// Address: a loopback address of its own (127.1.0.0/16 by default), in
// status.podIP and $POD_IP. Processes share the host's network otherwise.
//
// Processes: each container runs as a process in a process group of its
// own, in the pod's directory (also its HOME), with its output in
// logs/<namespace>_<pod>_<container>.log. The agent reports phase,
// conditions and container states as a kubelet does, runs httpGet probes,
// restarts exited containers with a back-off and terminates gracefully.
// What a container runs is up to Config.Resolve, which maps its image and
// command to a local program; an image it cannot map keeps the container
// waiting with reason ErrImagePull and a message naming the image, and
// nothing runs in its place.
//
// Services (Config.ServiceProxy): the agent plays kube-proxy. For every
// TCP port of every Service with a ClusterIP it listens on clusterIP:port
// (a loopback ClusterIP, from the API server's
// --service-cluster-ip-range), and for a NodePort also on
// 127.0.0.1:nodePort, and forwards each connection to a ready endpoint,
// taking them in turn. It listens only while the port has a ready
// endpoint, so that connections to a Service with none are refused at
// once, as kube-proxy's REJECT rule does. The EndpointSlice API refuses
// loopback addresses, so the endpointslice controller cannot publish this
// node's pods: for a Service with a selector the agent derives the
// endpoints itself as that controller would (matching pods with an
// address, ready unless publishNotReadyAddresses, on the target port by
// number or container port name); a Service without one uses its
// EndpointSlices, and the `kubernetes` Service goes to the API server the
// agent talks to. Pod, Service and EndpointSlice changes take effect as
// the watch delivers them. Ports below 1024 (the `kubernetes` Service's
// 443) need root or CAP_NET_BIND_SERVICE. The variables of the Services
// (KUBERNETES_SERVICE_HOST, ..._PORT and the Docker-link ones, of the
// pod's namespace unless enableServiceLinks is false) are set as the
// kubelet sets them. There is no cluster DNS: reach Services by ClusterIP.
//
// Volumes: secret, configMap, downwardAPI, projected (secret, configMap,
// downwardAPI and serviceAccountToken sources), emptyDir and
// persistentVolumeClaim, materialized under the pod's directory
// (volumes/<name>), with items, defaultMode, mode, optional, subPath and
// subPathExpr. Secret, ConfigMap, downward API and projected volumes follow
// changes of their sources the way the kubelet's AtomicWriter does: the
// files of a version are written into a fresh hidden directory, the
// ..data symlink is swapped to it with one rename, and every visible name
// links through ..data, so that a reader sees the old files or the new
// ones, never a mix. A subPath follows updates too (the kubelet's does
// not). Any other volume type, a missing Secret or ConfigMap (not
// optional), or an unbound claim keeps the containers waiting with reason
// FailedMount and a message naming the volume and the problem.
//
// Claims (Config.ProvisionVolumes): the agent is a local-path provisioner.
// It creates the default StorageClass LocalPathStorageClass and, for every
// claim the PersistentVolume controller hands to it, a hostPath
// PersistentVolume backed by a directory under the state directory
// (volumes/<pv name>), pre-bound to the claim; kube-controller-manager's
// persistentvolume-binder-controller binds them, so a StatefulSet's
// volumeClaimTemplates work with the real StatefulSet controller. The data
// stays through the deletion of the pod, and through a restart of the agent
// on the same state directory; the directory goes when the claim is
// deleted (reclaim policy Delete). A hostPath or local PersistentVolume
// made by anyone else works too: the pod uses its directory.
//
// Identity: the pod's ServiceAccount token is bound to the pod (a
// TokenRequest naming it), so RBAC and the audit log see
// system:serviceaccount:<ns>:<name> with the pod's name and uid in the
// user's extra fields, and the token dies with the pod. The
// ServiceAccount admission plugin gives a pod its kube-api-access
// projected volume at /var/run/secrets/kubernetes.io/serviceaccount (token,
// ca.crt, namespace), and the agent sets KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT. rest.InClusterConfig reads that fixed path,
// which no rewrite can reach; so, where the machine allows it (root: the
// agent creates the empty mount point once and probes it at start), each
// process of a pod with that volume runs in a mount namespace of its own in
// which the volume is bound read-only at that path, and
// rest.InClusterConfig works unchanged. Nothing else differs in that
// namespace. Where it does not (Config.NoMountNamespaces, or the probe
// failed), a pod whose ServiceAccount token is automounted gets instead a
// kubeconfig in its directory, named by $KUBECONFIG, holding the same
// kind of bound token inline; clients that load $KUBECONFIG first
// (controller-runtime's GetConfig, clientcmd's default rules) work, and
// rest.InClusterConfig does not.
//
// # The three rewrites
//
// Processes share the machine's network, file system and resolver, so
// the agent changes three things in what a container asks for.
//
// Addresses: every argument --<flag>=:<port>, --<flag>=0.0.0.0:<port> or
// --<flag>=0.0.0.0 becomes --<flag>=<podIP>[:<port>], and every URL on
// 0.0.0.0 in a --<flag>= value (--listen-client-urls=https://0.0.0.0:2379,...)
// points at the pod's address, so that pods listening on the same port do
// not clash.
//
// Paths: a process cannot see a mount namespace of the pod (but for the
// one above), so every absolute path in the container's command, args and
// env (after $(VAR) expansion) that is a volumeMount's mountPath or lies
// below it becomes the same path under the volume's directory on the host.
// A path counts where it starts the value or follows one of = , : ; space
// or a quote, so "--cert=/etc/tls/tls.crt", "a,/etc/tls/ca.crt" and
// "cat /etc/config/x" are rewritten, and "https://host/etc/tls" is not.
// Paths a program reads from its files are not rewritten: a file a process
// reads that names other files, a kubeconfig above all, must carry its data
// inline (certificate-authority-data, client-certificate-data,
// client-key-data, token), not paths.
//
// Host aliases: a kubelet writes a pod's spec.hostAliases into the pod's
// /etc/hosts; a process here resolves names with the machine's. So every
// URL in the container's command, args and env (after $(VAR) expansion)
// whose host is a name of the pod's hostAliases gets the alias's address
// instead: with an alias etcd-1 -> 127.200.0.7,
// "--initial-cluster=etcd-1=https://etcd-1:2380" becomes
// "--initial-cluster=etcd-1=https://127.200.0.7:2380" (the member name
// before "=" is no URL host and stays). Names outside URLs, and names a
// program reads from its files, are not rewritten.
//
// # Not supported
//
// Init and ephemeral containers, workingDir (a process runs in its pod's
// directory), resource limits and security contexts (ignored), readOnly
// mounts (writable but for the bound ServiceAccount directory), envFrom,
// env sources other than value and the fieldRefs of env.go, exec, tcpSocket
// and grpc probes (they pass without running), UDP and SCTP Service ports,
// externalTrafficPolicy and session affinity (ignored), cluster DNS, and
// volume types other than those listed above.
package nodeagent
