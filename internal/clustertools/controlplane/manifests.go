package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ReadManifests decodes every object in dir's .yaml files, in file name
// order, leaving out kustomize's own kustomization.yaml, followed by the
// ConfigMaps that kustomization generates (generatedConfigMaps).
func ReadManifests(dir string) ([]*unstructured.Unstructured, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list manifests: %w", err)
	}
	sort.Strings(paths)
	var objs []*unstructured.Unstructured
	for _, path := range paths {
		if filepath.Base(path) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		more, err := DecodeManifests(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		objs = append(objs, more...)
	}
	generated, err := generatedConfigMaps(dir)
	if err != nil {
		return nil, err
	}
	return append(objs, generated...), nil
}

// DecodeManifests decodes a stream of YAML or JSON documents, skipping empty ones.
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode manifests: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
