package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os/exec"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// render runs `kubectl kustomize dir`: the objects exactly as an operator's
// `kubectl apply -k` would create them, generated ConfigMap names included.
func render(ctx context.Context, kubectl, dir string) ([]*unstructured.Unstructured, error) {
	if kubectl == "" {
		return nil, errors.New("kubectl not found beside etcd and kube-apiserver: run `make controlplane`")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, stderr.String())
	}
	objs, err := controlplane.DecodeManifests(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w", dir, err)
	}
	return objs, nil
}

// workload is what the demo takes from a rendered Deployment or DaemonSet
// to run its container as a process: where it runs, as whom, and the
// environment its pod would get.
type workload struct {
	kind, name     string
	namespace      string
	serviceAccount string
	// env is the container's environment from envFrom and env, in the
	// kubelet's order (later entries win), without the fieldRef entries.
	env map[string]string
	// fieldRefs maps a variable to the downward API field it reads; the
	// demo gives each the value the kubelet would.
	fieldRefs map[string]string
}

// workloadOf finds the kind called name among objs and resolves its first
// container's environment against the ConfigMaps and Secrets beside it.
// An optional reference to a missing object is left out, as the kubelet
// does; a required one is an error.
func workloadOf(objs []*unstructured.Unstructured, kind, name string) (workload, error) {
	w := workload{kind: kind, name: name, env: map[string]string{}, fieldRefs: map[string]string{}}
	var obj *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			obj = o
		}
	}
	if obj == nil {
		return w, fmt.Errorf("no %s %s in the rendered manifests", kind, name)
	}
	w.namespace = obj.GetNamespace()
	w.serviceAccount, _, _ = unstructured.NestedString(obj.Object, "spec", "template", "spec", "serviceAccountName")
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if w.namespace == "" || w.serviceAccount == "" || len(containers) == 0 {
		return w, fmt.Errorf("%s %s: no namespace, serviceAccountName or container", kind, name)
	}
	c, _ := containers[0].(map[string]any)
	data := func(kind string, ref map[string]any) (map[string]string, bool, error) {
		refName, _ := ref["name"].(string)
		optional, _ := ref["optional"].(bool)
		d, ok := objectData(objs, kind, w.namespace, refName)
		if !ok && !optional {
			return nil, false, fmt.Errorf("%s %s: %s %s/%s is not in the rendered manifests", w.kind, w.name, kind, w.namespace, refName)
		}
		return d, ok, nil
	}
	envFrom, _, _ := unstructured.NestedSlice(c, "envFrom")
	for _, e := range envFrom {
		src, _ := e.(map[string]any)
		for field, kind := range map[string]string{"configMapRef": "ConfigMap", "secretRef": "Secret"} {
			ref, ok := src[field].(map[string]any)
			if !ok {
				continue
			}
			d, _, err := data(kind, ref)
			if err != nil {
				return w, err
			}
			maps.Copy(w.env, d)
		}
	}
	env, _, _ := unstructured.NestedSlice(c, "env")
	for _, e := range env {
		m, _ := e.(map[string]any)
		key, _ := m["name"].(string)
		if v, ok := m["value"].(string); ok {
			w.env[key] = v
			continue
		}
		from, _ := m["valueFrom"].(map[string]any)
		if path, ok, _ := unstructured.NestedString(from, "fieldRef", "fieldPath"); ok {
			w.fieldRefs[key] = path
			continue
		}
		for field, kind := range map[string]string{"configMapKeyRef": "ConfigMap", "secretKeyRef": "Secret"} {
			ref, ok := from[field].(map[string]any)
			if !ok {
				continue
			}
			d, found, err := data(kind, ref)
			if err != nil {
				return w, err
			}
			if item, _ := ref["key"].(string); found {
				w.env[key] = d[item]
			}
		}
	}
	return w, nil
}

// objectData is the data of a ConfigMap or Secret (stringData or decoded
// data) in namespace.
func objectData(objs []*unstructured.Unstructured, kind, namespace, name string) (map[string]string, bool) {
	for _, o := range objs {
		if o.GetKind() != kind || o.GetName() != name || o.GetNamespace() != namespace {
			continue
		}
		out, _, _ := unstructured.NestedStringMap(o.Object, "data")
		if kind == "Secret" {
			out = secretData(o)
		}
		return out, true
	}
	return nil, false
}

// secretData is a Secret's stringData over its decoded data.
func secretData(o *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	data, _, _ := unstructured.NestedStringMap(o.Object, "data")
	for k, v := range data {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			out[k] = string(b)
		}
	}
	plain, _, _ := unstructured.NestedStringMap(o.Object, "stringData")
	maps.Copy(out, plain)
	return out
}

// rendered is the platform as its manifests render it, ready for the demo.
type rendered struct {
	// objs are the objects the demo applies: all but the workloads,
	// Services and policies it runs or stands in for itself.
	objs      []*unstructured.Unstructured
	authapi   workload // Deployment authapi, as rendered
	nodeproxy workload // DaemonSet nodeproxy, as rendered
	// movedTo is --namespace when it moves the sandboxes and the auth API
	// out of authapi.namespace; empty when it does not.
	movedTo string
}

// sandboxNamespace is where the sandboxes and the auth API run.
func (m rendered) sandboxNamespace() string {
	if m.movedTo != "" {
		return m.movedTo
	}
	return m.authapi.namespace
}

// renderManifests renders the sandbox, auth API and node proxy manifests,
// takes the two workloads from them, and moves the sandbox namespace to
// --namespace when it names another.
func renderManifests(ctx context.Context, kubectl string, cfg config) (rendered, error) {
	var m rendered
	var all []*unstructured.Unstructured
	for _, dir := range []string{cfg.manifests, cfg.authapiDir, cfg.nodeproxyDir} {
		objs, err := render(ctx, kubectl, dir)
		if err != nil {
			return m, err
		}
		all = append(all, objs...)
	}
	var err error
	if m.authapi, err = workloadOf(all, "Deployment", "authapi"); err != nil {
		return m, err
	}
	if m.nodeproxy, err = workloadOf(all, "DaemonSet", "nodeproxy"); err != nil {
		return m, err
	}
	if cfg.namespace != "" && cfg.namespace != m.authapi.namespace {
		m.movedTo = cfg.namespace
		relocate(all, m.authapi.namespace, cfg.namespace)
	}
	m.objs = applicable(all)
	return m, nil
}
