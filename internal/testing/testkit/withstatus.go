package testkit

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatusWriter is a typed client of a resource with a status subresource.
type StatusWriter[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// CreateWithStatus creates obj, gives the created object its status with
// setStatus (the API server drops a status sent with a create) and
// returns the object as the status update left it.
func CreateWithStatus[T any](t testing.TB, c StatusWriter[T], obj T, setStatus func(T)) T {
	t.Helper()
	created, err := c.Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	setStatus(created)
	updated, err := c.UpdateStatus(t.Context(), created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	return updated
}
