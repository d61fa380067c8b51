package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// ErrNoContainer means no running pod of that name is on this kubelet's nodes.
var ErrNoContainer = errors.New("no such running pod on the simulated nodes")

// Kubelet runs the simulated nodes: it registers their Node objects, runs
// one agent app per pod bound to them and reports the pods' status.
type Kubelet struct {
	opts   Options
	log    *slog.Logger
	nodes  []*node
	byName map[string]*node
	ready  chan struct{}

	mu       sync.Mutex
	workers  map[types.UID]*worker
	stopping bool
	runCtx   context.Context // parent of every worker; set by Run
	wg       sync.WaitGroup
}

// New checks opts and prepares the nodes; Run starts them.
func New(opts Options) (*Kubelet, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("kubelet options: %w", err)
	}
	opts = opts.withDefaults()
	k := &Kubelet{
		opts:    opts,
		log:     opts.Logger.With("component", "sim-kubelet"),
		byName:  map[string]*node{},
		ready:   make(chan struct{}),
		workers: map[types.UID]*worker{},
	}
	for i := 1; i <= opts.Nodes; i++ {
		n := newNode(opts.NodePrefix, i, opts.LogDir, opts.DataDir)
		k.nodes = append(k.nodes, n)
		k.byName[n.name] = n
	}
	return k, nil
}

// NodeNames lists the simulated nodes in order.
func (k *Kubelet) NodeNames() []string {
	names := make([]string, len(k.nodes))
	for i, n := range k.nodes {
		names[i] = n.name
	}
	return names
}

// LogRoot is the pod log directory of node, laid out like /var/log/pods;
// "" for a node this kubelet does not run.
func (k *Kubelet) LogRoot(node string) string {
	if n := k.byName[node]; n != nil {
		return n.logRoot
	}
	return ""
}

// PodsDir is the pod directory of node, laid out like
// /var/lib/kubelet/pods: <pod uid>/volumes/kubernetes.io~empty-dir/<volume>
// holds each of a pod's emptyDir volumes while the pod runs there; "" for a
// node this kubelet does not run.
func (k *Kubelet) PodsDir(node string) string {
	if n := k.byName[node]; n != nil {
		return n.podsDir
	}
	return ""
}

// NodeIP is node's InternalIP; "" for a node this kubelet does not run.
func (k *Kubelet) NodeIP(node string) string {
	if n := k.byName[node]; n != nil {
		return n.ip
	}
	return ""
}

// VolumeDir is the directory standing in for a PersistentVolumeClaim: it
// survives its pods and is removed when the claim is deleted.
func (k *Kubelet) VolumeDir(namespace, claim string, uid types.UID) string {
	return filepath.Join(k.opts.DataDir, namespace+"_"+claim+"_"+string(uid))
}

// Ready is closed once the nodes are registered and the caches synced.
func (k *Kubelet) Ready() <-chan struct{} { return k.ready }

// Run registers the nodes and runs pods until ctx ends. Then it stops every
// app, waits for them, and deletes the Node objects (pods stay, as when a
// real node goes away).
func (k *Kubelet) Run(ctx context.Context) error {
	k.mu.Lock()
	k.runCtx = ctx
	k.mu.Unlock()
	for _, n := range k.nodes {
		if err := os.MkdirAll(n.logRoot, 0o755); err != nil {
			return fmt.Errorf("create log root: %w", err)
		}
		if err := os.MkdirAll(n.podsDir, 0o750); err != nil {
			return fmt.Errorf("create pods directory: %w", err)
		}
		if err := k.register(ctx, n); err != nil {
			return err
		}
	}
	defer k.unregisterAll()

	var factories []informers.SharedInformerFactory
	defer func() {
		for _, f := range factories {
			f.Shutdown()
		}
	}()
	var synced []cache.InformerSynced
	for _, n := range k.nodes {
		f := informers.NewSharedInformerFactoryWithOptions(k.opts.Client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", n.name).String()
			}))
		inf := f.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(k.podHandler(n)); err != nil {
			return fmt.Errorf("watch pods: %w", err)
		}
		factories = append(factories, f)
		synced = append(synced, inf.HasSynced)
	}
	namespaces := k.opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		f := informers.NewSharedInformerFactoryWithOptions(k.opts.Client, 0, informers.WithNamespace(ns))
		inf := f.Core().V1().PersistentVolumeClaims().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: k.onClaimDeleted}); err != nil {
			return fmt.Errorf("watch volume claims: %w", err)
		}
		factories = append(factories, f)
		synced = append(synced, inf.HasSynced)
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		k.stopWorkers()
		return ctx.Err()
	}
	close(k.ready)
	k.log.Info("nodes ready", "nodes", k.NodeNames())
	<-ctx.Done()
	k.stopWorkers()
	return nil
}

// stopWorkers stops accepting pods and waits for every app to stop.
func (k *Kubelet) stopWorkers() {
	k.mu.Lock()
	k.stopping = true
	k.mu.Unlock()
	k.wg.Wait()
}

func (k *Kubelet) unregisterAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, n := range k.nodes {
		if err := k.unregister(ctx, n); err != nil {
			k.log.Warn("unregister node", "node", n.name, "error", err)
		}
	}
}

// podHandler dispatches node n's pod events to pod workers.
func (k *Kubelet) podHandler(n *node) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.onPod(n, obj) },
		UpdateFunc: func(_, obj any) { k.onPod(n, obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				k.terminate(pod.UID)
			}
		},
	}
}

func (k *Kubelet) onPod(n *node, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != n.name {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	w := k.workers[pod.UID]
	if w == nil {
		if k.stopping || isTerminal(pod) {
			return
		}
		w = newWorker(k, n, pod)
		k.workers[pod.UID] = w
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			w.run(k.runCtx)
			k.mu.Lock()
			delete(k.workers, pod.UID)
			k.mu.Unlock()
		}()
	}
	if pod.DeletionTimestamp != nil {
		w.terminate()
	}
}

func (k *Kubelet) terminate(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w := k.workers[uid]; w != nil {
		w.terminate()
	}
}

// KillContainer crashes the agent app of pod namespace/name as if its
// process died: the kubelet restarts it with restartCount+1, a new log
// file and a new launch token.
func (k *Kubelet) KillContainer(namespace, name string) error {
	return k.running(namespace, name, (*worker).crash)
}

// EvictPod fails pod namespace/name for good, as a node-pressure eviction
// or a reclaimed spot node does: the app stops and the pod reports phase
// Failed (reason Evicted) until it is deleted; nothing restarts it.
func (k *Kubelet) EvictPod(namespace, name string) error {
	return k.running(namespace, name, (*worker).evict)
}

// running calls do with the worker of pod namespace/name unless it is
// terminating; with no such worker it returns ErrNoContainer.
func (k *Kubelet) running(namespace, name string, do func(*worker)) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range k.workers {
		if w.namespace == namespace && w.name == name && !w.terminating() {
			do(w)
			return nil
		}
	}
	return fmt.Errorf("%w: %s/%s", ErrNoContainer, namespace, name)
}

// onClaimDeleted removes the volume directory of a deleted claim.
func (k *Kubelet) onClaimDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	dir := k.VolumeDir(pvc.Namespace, pvc.Name, pvc.UID)
	if err := os.RemoveAll(dir); err != nil {
		k.log.Warn("remove volume", "namespace", pvc.Namespace, "pvc", pvc.Name, "error", err)
		return
	}
	k.log.Debug("volume removed", "namespace", pvc.Namespace, "pvc", pvc.Name)
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
