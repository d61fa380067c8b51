package fleet

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			Labels: map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user},
			Annotations: map[string]string{
				account.AnnotationTokenHash: hex.EncodeToString(hash[:]), account.AnnotationSessionEpoch: "1",
				extensions.AnnotationSandboxName: sandboxName(i), // as adoption writes it
			},
		},
		Spec: extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "dsh-pool"}},
	}
	if _, err := sb.SandboxClaims(namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create claim: %w", err)
	}
	box := &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: sandboxName(i), Namespace: namespace},
		Spec: agents.SandboxSpec{PodTemplate: agents.PodTemplate{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "dsh", Image: "dsh"}},
		}}},
	}
	if _, err := sb.Sandboxes(namespace).Create(ctx, box, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create sandbox: %w", err)
	}
	return nil
}

// sandboxName names account i's Sandbox.
func sandboxName(i int) string { return "dsh-pool-" + strconv.Itoa(i) }
