package fleet

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// nodeName and userName name the i-th node and account.
func nodeName(i int) string { return fmt.Sprintf("node-%03d", i) }
func userName(i int) string { return "user" + strconv.Itoa(i) }

// creators bounds the concurrent creates that populate the API server.
const creators = 16

// populate creates the namespace, nodes Nodes and users accounts: a
// managed claim and its Sandbox each, the Sandboxes spread over the nodes.
func populate(ctx context.Context, kube kubernetes.Interface, sb *sandboxapi.Client, users, nodes int) error {
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	for i := range nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}}
		n, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create node: %w", err)
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.1", i/250, i%250)}}
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("set node address: %w", err)
		}
	}
	work := make(chan int)
	errs := make(chan error, creators)
	var wg sync.WaitGroup
	for range creators {
		wg.Go(func() {
			for i := range work {
				if err := createAccount(ctx, sb, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range users {
		select {
		case work <- i:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	return errors.Join(err, <-errs)
}

// createAccount creates user i's claim and Sandbox.
func createAccount(ctx context.Context, sb *sandboxapi.Client, i int) error {
	user := userName(i)
	hash := account.HashToken("fleet-token-" + user)
	claim := &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: account.ClaimName(informer.DefaultClaimPrefix, user), Namespace: namespace,
			Labels:      map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user},
			Annotations: map[string]string{account.AnnotationTokenHash: hex.EncodeToString(hash[:]), account.AnnotationSessionEpoch: "1"},
		},
		Spec: extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "dsh-pool"}},
	}
	if _, err := sb.SandboxClaims(namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create claim: %w", err)
	}
	box := &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "dsh-pool-" + strconv.Itoa(i), Namespace: namespace},
		Spec: agents.SandboxSpec{PodTemplate: agents.PodTemplate{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "dsh", Image: "dsh"}},
		}}},
	}
	if _, err := sb.Sandboxes(namespace).Create(ctx, box, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create sandbox: %w", err)
	}
	return nil
}

// reachTimeout bounds the wait for one change to reach every cache.
const reachTimeout = time.Minute

// change raises user's session epoch, as a logout of every session does,
// and returns how long after the request the last of idx held it.
func change(ctx context.Context, sb *sandboxapi.Client, idx []*informer.Index, user string) (time.Duration, error) {
	var mu sync.Mutex
	var last time.Time
	left := len(idx)
	all := make(chan struct{})
	for _, x := range idx {
		var once sync.Once
		stop := x.WatchAccount(user, func() {
			once.Do(func() {
				mu.Lock()
				defer mu.Unlock()
				last = time.Now()
				if left--; left == 0 {
					close(all)
				}
			})
		})
		defer stop()
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, account.AnnotationSessionEpoch, strconv.FormatInt(time.Now().UnixNano(), 10))
	sent := time.Now()
	if _, err := sb.SandboxClaims(namespace).Patch(ctx, account.ClaimName(informer.DefaultClaimPrefix, user), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return 0, fmt.Errorf("raise session epoch: %w", err)
	}
	select {
	case <-all:
	case <-time.After(reachTimeout):
		return 0, fmt.Errorf("a change of %s reached %d of %d caches in %v", user, len(idx)-left, len(idx), reachTimeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	return last.Sub(sent), nil
}
