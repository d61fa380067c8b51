{{/*
sandgate.key names an object: kind/namespace/name.
*/}}
{{- define "sandgate.key" -}}
{{ .kind }}/{{ .metadata.namespace | default "" }}/{{ .metadata.name }}
{{- end -}}

{{/*
sandgate.objects is the YAML list of the platform's objects: files/base.yaml
(kubectl kustomize manifests/base), then the changes the exposure Component
and the hardening Component make to it (files/<component>.yaml: objects to
remove by key, objects to add or replace). chart_test.go generates these
files from manifests/ and checks that every combination renders as kustomize
renders it.
*/}}
{{- define "sandgate.objects" -}}
{{- $objs := .Files.Get "files/base.yaml" | fromYamlArray -}}
{{- $components := list -}}
{{- if not (has .Values.exposure (list "nodeport" "ingress" "sso" "subdomain" "hostnetwork")) -}}
{{- fail (printf "exposure %q: want nodeport, ingress, sso, subdomain or hostnetwork" .Values.exposure) -}}
{{- end -}}
{{- if ne .Values.exposure "nodeport" -}}
{{- $components = append $components .Values.exposure -}}
{{- end -}}
{{- if .Values.hardening.enabled -}}
{{- $components = append $components "hardening" -}}
{{- end -}}
{{- range $component := $components -}}
{{- $delta := $.Files.Get (printf "files/%s.yaml" $component) | fromYaml -}}
{{- $kept := list -}}
{{- range $o := $objs -}}
{{- if not (has (include "sandgate.key" $o) ($delta.remove | default list)) -}}
{{- $kept = append $kept $o -}}
{{- end -}}
{{- end -}}
{{- $objs = $kept -}}
{{- range $u := $delta.upsert -}}
{{- $key := include "sandgate.key" $u -}}
{{- $found := false -}}
{{- $next := list -}}
{{- range $o := $objs -}}
{{- if eq (include "sandgate.key" $o) $key -}}
{{- $next = append $next $u -}}
{{- $found = true -}}
{{- else -}}
{{- $next = append $next $o -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- $next = append $next $u -}}
{{- end -}}
{{- $objs = $next -}}
{{- end -}}
{{- end -}}
{{ toYaml $objs }}
{{- end -}}

{{/*
sandgate.labels sets Helm's labels on a labels map: the release manages the
object, not kustomize.
*/}}
{{- define "sandgate.labels" -}}
{{- $ := index . 0 -}}
{{- $labels := index . 1 -}}
{{- $_ := set $labels "app.kubernetes.io/managed-by" $.Release.Service -}}
{{- $_ = set $labels "app.kubernetes.io/instance" $.Release.Name -}}
{{- $_ = set $labels "helm.sh/chart" (printf "%s-%s" $.Chart.Name $.Chart.Version | replace "+" "_") -}}
{{- end -}}
