package kubelet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Address plan on the loopback network, 127.0.0.0/8:
//
//	node i (from 1) has InternalIP 127.0.1.<i>
//	its pods get addresses from 127.<podNetBase+i>.0.0/16
//
// Every pod address is bound to test that it is free, so simulated
// clusters of several test processes on one machine never collide.
const podNetBase = 100

// node is one simulated node: its Node object, its own log root and pod
// directory, and the pod address range it hands out.
type node struct {
	name    string
	index   int // from 1
	ip      string
	logRoot string
	podsDir string // like /var/lib/kubelet/pods

	mu   sync.Mutex
	next uint32 // host part of the next pod address to try
}

// newNode prepares node index (from 1); its log root is <logDir>/<name>
// and its pod directory <dataDir>/kubelet/<name>/pods.
func newNode(prefix string, index int, logDir, dataDir string) *node {
	name := prefix + "-" + strconv.Itoa(index)
	return &node{
		name:    name,
		index:   index,
		ip:      "127.0.1." + strconv.Itoa(index),
		logRoot: filepath.Join(logDir, name),
		podsDir: filepath.Join(dataDir, "kubelet", name, "pods"),
		next:    1,
	}
}

// podCIDR is the node's pod address range.
func (n *node) podCIDR() string { return fmt.Sprintf("127.%d.0.0/16", podNetBase+n.index) }

// listenNew binds port on the next free address of the node's range; a pod
// keeps that address for its life. Addresses are not reused until the
// range wraps, so a recreated pod gets a new IP as it would on a real node.
func (n *node) listenNew(port int) (net.Listener, string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for range 1024 {
		host := n.next
		n.next++
		if n.next >= 1<<16-1 {
			n.next = 1
		}
		if host&0xff == 0 || host&0xff == 0xff {
			continue
		}
		ip := fmt.Sprintf("127.%d.%d.%d", podNetBase+n.index, host>>8, host&0xff)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			return ln, ip, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, "", fmt.Errorf("bind pod address: %w", err)
		}
	}
	return nil, "", fmt.Errorf("no free pod address on node %s", n.name)
}

// listenAgain binds ip:port again for a restarted container, retrying
// briefly in case the old socket is still closing.
func listenAgain(ctx context.Context, ip string, port int) (net.Listener, error) {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("bind pod address again: %w", err)
}

// object returns the Node object the simulated node registers.
func (n *node) object(extraLabels map[string]string) *corev1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname": n.name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}
	maps.Copy(labels, extraLabels)
	cidr := n.podCIDR()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: labels},
		Spec:       corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
	}
}

// status is the Node status the simulated node reports: Ready, with its
// loopback InternalIP.
func (n *node) status() corev1.NodeStatus {
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", Message: "simulated kubelet is posting ready status",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: n.ip},
			{Type: corev1.NodeHostName, Address: n.name},
		},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          "v1.37.2-sim",
			ContainerRuntimeVersion: "sim://1",
			OperatingSystem:         "linux",
			Architecture:            "amd64",
			OSImage:                 "sandgate simulated node",
		},
	}
}

// register creates or updates the Node object and reports it Ready.
func (k *Kubelet) register(ctx context.Context, n *node) error {
	nodes := k.opts.Client.CoreV1().Nodes()
	want := n.object(k.opts.NodeLabels)
	got, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = nodes.Get(ctx, n.name, metav1.GetOptions{})
		if err == nil {
			got.Labels = want.Labels
			got, err = nodes.Update(ctx, got, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", n.name, err)
	}
	got.Status = n.status()
	if _, err := nodes.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("report node %s ready: %w", n.name, err)
	}
	return nil
}

// unregister deletes the Node object; a stopped simulation leaves no node
// that a scheduler could pick.
func (k *Kubelet) unregister(ctx context.Context, n *node) error {
	err := k.opts.Client.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", n.name, err)
	}
	return nil
}
