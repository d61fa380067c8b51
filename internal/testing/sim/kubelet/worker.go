package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/httpprobe"
	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
)

// TrustedHostsEnv is the container variable whose comma-separated hosts
// the app trusts, like DSH Web.
const TrustedHostsEnv = "DSH_TRUSTED_HOSTS"

// outcome is how one run of a container ended.
type outcome int

const (
	crashed outcome = iota // the app died: restart it
	stopped                // pod deleted or kubelet stopping
	evicted                // the pod failed for good: it stays Failed until deleted
)

// worker owns one pod on one node, like the kubelet's pod worker: it runs
// the pod's first container as an agent app, restarts it when it dies,
// reports status, and finishes the pod's deletion.
type worker struct {
	k         *Kubelet
	node      *node
	pod       *corev1.Pod // as first seen; the spec does not change
	namespace string
	name      string
	uid       types.UID
	log       *slog.Logger
	probe     *http.Client

	stopOnce sync.Once
	stopCh   chan struct{} // closed when the pod is being deleted
	killCh   chan struct{}
	evictCh  chan struct{}
}

func newWorker(k *Kubelet, n *node, pod *corev1.Pod) *worker {
	return &worker{
		k: k, node: n, pod: pod.DeepCopy(),
		namespace: pod.Namespace, name: pod.Name, uid: pod.UID,
		log:     k.log.With("node", n.name, "namespace", pod.Namespace, "pod", pod.Name),
		probe:   &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		stopCh:  make(chan struct{}),
		killCh:  make(chan struct{}, 1),
		evictCh: make(chan struct{}, 1),
	}
}

func (w *worker) terminate() { w.stopOnce.Do(func() { close(w.stopCh) }) }

func (w *worker) terminating() bool {
	select {
	case <-w.stopCh:
		return true
	default:
		return false
	}
}

func (w *worker) crash() {
	select {
	case w.killCh <- struct{}{}:
	default:
	}
}

func (w *worker) evict() {
	select {
	case w.evictCh <- struct{}{}:
	default:
	}
}

// run drives the pod until it is deleted or ctx ends.
func (w *worker) run(ctx context.Context) {
	dataDir, ephemeral := "", false
	defer func() {
		if w.terminating() {
			w.finish(ctx, dataDir, ephemeral)
		}
	}()
	if w.terminating() || len(w.pod.Spec.Containers) == 0 {
		w.wait(ctx)
		return
	}
	ln, ip, err := w.node.listenNew(w.k.opts.PodPort)
	if err != nil {
		w.log.Error("start pod", "error", err)
		w.wait(ctx)
		return
	}
	dataDir, ephemeral, err = w.volume(ctx)
	if err == nil {
		err = w.emptyDirs()
		if err != nil {
			w.log.Error("start pod", "error", err)
		}
	}
	if err != nil {
		ln.Close()
		w.wait(ctx)
		return
	}
	st := newPodState(w.pod, ip, w.node.ip)
	for {
		switch w.runContainer(ctx, ln, dataDir, st) {
		case stopped:
			return
		case evicted:
			w.wait(ctx)
			return
		}
		if ln, err = listenAgain(ctx, ip, w.k.opts.PodPort); err != nil {
			w.log.Error("restart container", "error", err)
			w.wait(ctx)
			return
		}
	}
}

// wait blocks until the pod is deleted or ctx ends.
func (w *worker) wait(ctx context.Context) {
	select {
	case <-w.stopCh:
	case <-ctx.Done():
	}
}

// volume returns the directory standing in for the pod's first
// PersistentVolumeClaim, waiting for the claim to exist, or a fresh
// ephemeral directory when the pod has none.
func (w *worker) volume(ctx context.Context) (string, bool, error) {
	claim := ""
	for _, v := range w.pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
			break
		}
	}
	if claim == "" {
		dir := filepath.Join(w.k.opts.DataDir, "pods", string(w.uid))
		return dir, true, os.MkdirAll(dir, 0o700)
	}
	for {
		pvc, err := w.k.opts.Client.CoreV1().PersistentVolumeClaims(w.namespace).Get(ctx, claim, metav1.GetOptions{})
		if err == nil && pvc.DeletionTimestamp == nil {
			dir := w.k.VolumeDir(w.namespace, claim, pvc.UID)
			return dir, false, os.MkdirAll(dir, 0o700)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			w.log.Warn("get volume claim", "pvc", claim, "error", err)
		}
		select {
		case <-w.stopCh:
			return "", false, errors.New("pod deleted")
		case <-ctx.Done():
			return "", false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runContainer runs the app once, from start to crash or stop.
func (w *worker) runContainer(ctx context.Context, ln net.Listener, dataDir string, st *podState) outcome {
	container := w.pod.Spec.Containers[0]
	st.started()
	clog, err := openCRILog(criLogOptions{
		dir:      filepath.Join(w.node.logRoot, w.namespace+"_"+w.name+"_"+string(w.uid), container.Name),
		restart:  int(st.restarts),
		maxSize:  w.k.opts.LogMaxSize,
		maxFiles: w.k.opts.LogMaxFiles,
		maxLine:  w.k.opts.LogMaxLine,
		now:      w.k.opts.Now,
	})
	if err != nil {
		ln.Close()
		w.log.Error("open container log", "error", err)
		w.wait(ctx)
		return stopped
	}
	defer func() {
		if err := clog.Close(); err != nil {
			w.log.Warn("close container log", "error", err)
		}
	}()
	opts := w.k.opts.App
	opts.Stdout, opts.Stderr, opts.DataDir = clog.Stdout(), clog.Stderr(), dataDir
	opts.TrustedHosts = append(append([]string(nil), opts.TrustedHosts...), w.trustedHosts(ctx, container)...)
	opts.TokenFile = w.tokenFile(ctx, container)
	opts.ShutdownTimeout = w.k.opts.StopTimeout
	app := agentapp.New(opts)
	appCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- app.Serve(appCtx, ln) }()

	w.report(ctx, st)
	ticker := time.NewTicker(w.k.opts.ProbeInterval)
	defer ticker.Stop()
	probe := ticker.C
	for {
		select {
		case err := <-served:
			w.log.Warn("container exited", "error", err, "restarts", st.restarts)
			st.exited(1)
			return crashed
		case <-w.killCh:
			cancel()
			<-served
			w.log.Info("container killed", "restarts", st.restarts)
			st.exited(137)
			return crashed
		case <-w.evictCh:
			cancel()
			<-served
			w.log.Info("pod evicted")
			st.exited(137)
			st.failed = true
			w.report(ctx, st)
			return evicted
		case <-w.stopCh:
			cancel()
			<-served
			return stopped
		case <-ctx.Done():
			<-served
			return stopped
		case <-probe:
			if w.probeOK(ctx, st.ip) {
				probe = nil
				st.setReady()
				w.report(ctx, st)
			}
		}
	}
}

// probeOK runs the readiness probe against the pod at ip.
func (w *worker) probeOK(ctx context.Context, ip string) bool {
	req, err := probeRequest(ctx, ip, w.k.opts.PodPort)
	if err != nil {
		return false
	}
	return httpprobe.OK(w.probe, req) == nil
}

// probeRequest is the readiness probe of the pod at ip: GET ProbePath on
// its port with Host: localhost:<port>, as the sandbox template's probes
// send it. A kubelet's default Host would be the pod IP, which the app,
// listening on 0.0.0.0 in a real pod, refuses with 400 like DSH Web.
func probeRequest(ctx context.Context, ip string, port int) (*http.Request, error) {
	p := strconv.Itoa(port)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(ip, p)+agentapp.ProbePath, nil)
	if err != nil {
		return nil, fmt.Errorf("build probe request: %w", err)
	}
	req.Host = net.JoinHostPort("localhost", p)
	return req, nil
}

// finish completes the pod's deletion once its app has stopped: the pod
// object goes away (grace 0, this UID only), then its logs, any ephemeral
// volume and its pod directory (emptyDir volumes), as the kubelet's
// garbage collection does.
func (w *worker) finish(ctx context.Context, dataDir string, ephemeral bool) {
	if ctx.Err() == nil {
		err := w.k.opts.Client.CoreV1().Pods(w.namespace).Delete(ctx, w.name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &w.uid},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			w.log.Warn("delete pod", "error", err)
		}
	}
	podDir := filepath.Join(w.node.logRoot, w.namespace+"_"+w.name+"_"+string(w.uid))
	if err := os.RemoveAll(podDir); err != nil {
		w.log.Warn("remove pod logs", "error", err)
	}
	if ephemeral && dataDir != "" {
		if err := os.RemoveAll(dataDir); err != nil {
			w.log.Warn("remove ephemeral volume", "error", err)
		}
	}
	if err := os.RemoveAll(w.podDir()); err != nil {
		w.log.Warn("remove pod directory", "error", err)
	}
	w.log.Debug("pod removed")
}

// report sends the pod status, retrying a few times on transient errors;
// a pod deleted or replaced meanwhile is not an error.
func (w *worker) report(ctx context.Context, st *podState) {
	status := st.status()
	for attempt := 1; ; attempt++ {
		err := w.patchStatus(ctx, status)
		if err == nil || ctx.Err() != nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			return
		}
		if attempt == 5 {
			w.log.Warn("report pod status", "error", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}
