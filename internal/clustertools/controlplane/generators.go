package controlplane

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// kustomization is the part of a kustomization.yaml that ReadManifests
// reads: the ConfigMaps it generates.
type kustomization struct {
	Namespace          string `json:"namespace"`
	ConfigMapGenerator []struct {
		Name      string   `json:"name"`
		Namespace string   `json:"namespace"`
		Envs      []string `json:"envs"`
		Literals  []string `json:"literals"`
	} `json:"configMapGenerator"`
}

// generatedConfigMaps are the ConfigMaps dir's kustomization.yaml
// generates from env files and literals, under their names without
// kustomize's hash suffix: the demo and the tests apply a part's objects
// without kustomize, and find its settings by name.
func generatedConfigMaps(dir string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read kustomization: %w", err)
	}
	var k kustomization
	if err := utilyaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("%s: decode kustomization: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, g := range k.ConfigMapGenerator {
		values := map[string]any{}
		for _, env := range g.Envs {
			if err := readEnvFile(filepath.Join(dir, env), values); err != nil {
				return nil, err
			}
		}
		if err := envLines(g.Literals, values); err != nil {
			return nil, fmt.Errorf("%s: ConfigMap %s: %w", dir, g.Name, err)
		}
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": values}}
		cm.SetName(g.Name)
		cm.SetNamespace(cmp.Or(g.Namespace, k.Namespace))
		objs = append(objs, cm)
	}
	return objs, nil
}

// readEnvFile adds the KEY=VALUE lines of a kustomize env file to values.
func readEnvFile(path string, values map[string]any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read env file: %w", err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := envLines(lines, values); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// envLines adds KEY=VALUE lines to values as kustomize reads them:
// blank lines and # comments are skipped, the value is the rest of the
// line after the first '='.
func envLines(lines []string, values map[string]any) error {
	for _, line := range lines {
		line = strings.TrimRight(strings.TrimLeft(line, " \t"), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || key == "" {
			return fmt.Errorf("env line %q is not KEY=VALUE", line)
		}
		values[key] = value
	}
	return nil
}
