// Package kubelet is a STAND-IN for the kubelet and container runtime of a
// few nodes. It exists only for sandgate's tests and the local demo, where no
// container runtime runs; no production binary may import it.
//
// A Kubelet registers N Node objects (Ready, InternalIP 127.0.1.<i>) and runs
// every pod bound to them in-process: the pod's first container is an
// agentapp.App serving on a loopback address of its own (127.<100+i>.x.y,
// port 3080). It reports pod status like a kubelet (phase, Ready once the app
// answers agentapp.ProbePath, podIP, hostIP, restart count), writes the app's
// stdout and stderr in CRI format to the node's own log root, laid out like
// /var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log with size-based
// rotation and gzip, and restarts a crashed app (KillContainer) with a new
// log file and launch token.
//
// Volumes: the directory VolumeDir stands in for a PersistentVolumeClaim; it
// survives the pod, so state outlives suspend and resume, and goes when the
// claim is deleted. A pod without a claim gets a directory that dies with it.
// emptyDir volumes live in the node's pod directory (PodsDir), laid out like
// /var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~empty-dir/<volume>, for
// the pod's life; a container whose DSH_TOKEN_FILE names a file on one has
// its app write the launch token there, where a node proxy with
// TOKEN_SOURCE=file reads it.
//
// Deletion: pods carry no finalizers, so the API server only marks a
// graceful delete; the stand-in stops the app and then removes the pod with
// grace period 0, as a kubelet does.
package kubelet
