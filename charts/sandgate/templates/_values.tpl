{{/*
sandgate.workload applies the image, pull policy, resources and settings
checksum to a Deployment or DaemonSet: (list $ object image values).
*/}}
{{- define "sandgate.workload" -}}
{{- $ := index . 0 -}}
{{- $o := index . 1 -}}
{{- $v := index . 3 -}}
{{- $tmpl := $o.spec.template -}}
{{- $_ := set $tmpl.metadata "labels" ($tmpl.metadata.labels | default dict) -}}
{{- include "sandgate.labels" (list $ $tmpl.metadata.labels) -}}
{{- $_ = unset $tmpl.metadata.labels "helm.sh/chart" -}}
{{- $c := index $tmpl.spec.containers 0 -}}
{{- $_ = set $c "image" (index . 2) -}}
{{- if $.Values.images.pullPolicy -}}
{{- $_ = set $c "imagePullPolicy" $.Values.images.pullPolicy -}}
{{- end -}}
{{- if $v.resources -}}
{{- $_ = set $c "resources" $v.resources -}}
{{- end -}}
{{- if $v.config -}}
{{- $annotations := $tmpl.metadata.annotations | default dict -}}
{{- $_ = set $annotations "sandgate.io/config-checksum" ($v.config | toJson | sha256sum) -}}
{{- $_ = set $tmpl.metadata "annotations" $annotations -}}
{{- end -}}
{{- end -}}

{{/*
sandgate.config merges settings into a generated ConfigMap's data:
(list configmap settings). The claim settings stay as shipped, since the
admission policy reads them from its own copy.
*/}}
{{- define "sandgate.config" -}}
{{- $o := index . 0 -}}
{{- range $k, $v := index . 1 -}}
{{- if has $k (list "CLAIM_PREFIX" "WARM_POOL") -}}
{{- fail (printf "%s is fixed in the chart: the admission policy reads it too" $k) -}}
{{- end -}}
{{- $_ := set $o.data $k (toString $v) -}}
{{- end -}}
{{- end -}}
