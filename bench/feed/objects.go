package feed

import (
	"encoding/hex"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Node is a simulated node: its name and InternalIP.
type Node struct {
	Name string
	IP   string
}

// Options describe the objects to feed.
type Options struct {
	// Namespace holds the claims, Sandboxes and pods.
	Namespace string
	// Users is how many accounts exist; User names them.
	Users int
	User  func(i int) string
	// Nodes are every node; user i's Sandbox runs on Nodes[Place(i)].
	Nodes []Node
	Place func(i int) int
	// Local is the node proxy's node: only its pods are fed, as the
	// Index's field selector would list them.
	Local string
	// PodIP and PodPort are where every local pod's app listens.
	PodIP   string
	PodPort int32
}

// Lists are the objects of Options as the Index's list-watchers.
type Lists struct {
	Claims    *List[*extensions.SandboxClaimList]
	Sandboxes *List[*agents.SandboxList]
	Pods      *List[*corev1.PodList]
	Nodes     *List[*corev1.NodeList]
}

// Token is user's bearer token, whose hash the claim carries.
func Token(user string) string { return "bench-token-" + user }

// ClaimUID is the metadata.uid of user's claim, which session ids carry.
func ClaimUID(user string) string { return "bench-claim-" + user }

// Build creates the objects of o.
func Build(o Options) *Lists {
	claims := &extensions.SandboxClaimList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]extensions.SandboxClaim, 0, o.Users)}
	sandboxes := &agents.SandboxList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]agents.Sandbox, 0, o.Users)}
	pods := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	nodes := &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	for _, n := range o.Nodes {
		nodes.Items = append(nodes.Items, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, ResourceVersion: "1"},
			Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.IP}}},
		})
	}
	now := metav1.Now()
	controller := true
	for i := range o.Users {
		user := o.User(i)
		sandbox := "dsh-pool-" + strconv.Itoa(i)
		node := o.Nodes[o.Place(i)].Name
		h := account.HashToken(Token(user))
		claims.Items = append(claims.Items, extensions.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name: account.ClaimName(informer.DefaultClaimPrefix, user), Namespace: o.Namespace, ResourceVersion: "1", UID: types.UID(ClaimUID(user)),
				Labels:      map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user},
				Annotations: map[string]string{account.AnnotationTokenHash: hex.EncodeToString(h[:]), account.AnnotationSessionEpoch: "1"},
			},
			Spec:   extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "dsh-pool"}},
			Status: extensions.SandboxClaimStatus{Sandbox: extensions.ClaimedSandbox{Name: sandbox}},
		})
		sandboxUID := types.UID(fmt.Sprintf("00000000-0000-4000-9000-%012d", i))
		sandboxes.Items = append(sandboxes.Items, agents.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: sandbox, Namespace: o.Namespace, ResourceVersion: "1", UID: sandboxUID},
			Spec:       agents.SandboxSpec{OperatingMode: agents.OperatingModeRunning},
			Status: agents.SandboxStatus{NodeName: node, Conditions: []metav1.Condition{{
				Type: agents.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: now,
			}}},
		})
		if node != o.Local {
			continue
		}
		pods.Items = append(pods.Items, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: sandbox, Namespace: o.Namespace, ResourceVersion: "1",
				UID:             types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: agents.GroupVersion.String(), Kind: "Sandbox", Name: sandbox, UID: sandboxUID, Controller: &controller}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
				Name: "dsh", Image: "dsh", Ports: []corev1.ContainerPort{{ContainerPort: o.PodPort}},
			}}},
			Status: corev1.PodStatus{PodIP: o.PodIP, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	return &Lists{
		Claims:    NewList(claims, &extensions.SandboxClaimList{}, func() Object { return &extensions.SandboxClaim{} }),
		Sandboxes: NewList(sandboxes, &agents.SandboxList{}, func() Object { return &agents.Sandbox{} }),
		Pods:      NewList(pods, &corev1.PodList{}, func() Object { return &corev1.Pod{} }),
		Nodes:     NewList(nodes, &corev1.NodeList{}, func() Object { return &corev1.Node{} }),
	}
}

// Informer returns o with the list-watchers set to l.
func (l *Lists) Informer(o informer.Options) informer.Options {
	o.Claims, o.Sandboxes, o.Pods, o.Nodes = l.Claims, l.Sandboxes, l.Pods, l.Nodes
	return o
}

// Drop releases every list.
func (l *Lists) Drop() {
	l.Claims.Drop()
	l.Sandboxes.Drop()
	l.Pods.Drop()
	l.Nodes.Drop()
}
