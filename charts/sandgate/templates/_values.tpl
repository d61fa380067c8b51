{{/*
sandgate.workload applies the image, pull policy, resources and settings
checksum to a Deployment or DaemonSet: (list $ object image resources
settings), where settings are what sandgate.config changed in its ConfigMap.
*/}}
{{- define "sandgate.workload" -}}
{{- $ := index . 0 -}}
{{- $o := index . 1 -}}
{{- $resources := index . 3 -}}
{{- $settings := index . 4 -}}
{{- $tmpl := $o.spec.template -}}
{{- $_ := set $tmpl.metadata "labels" ($tmpl.metadata.labels | default dict) -}}
{{- include "sandgate.labels" (list $ $tmpl.metadata.labels) -}}
{{- $_ = unset $tmpl.metadata.labels "helm.sh/chart" -}}
{{- $c := index $tmpl.spec.containers 0 -}}
{{- $_ = set $c "image" (index . 2) -}}
{{- if $.Values.images.pullPolicy -}}
{{- $_ = set $c "imagePullPolicy" $.Values.images.pullPolicy -}}
{{- end -}}
{{- if $resources -}}
{{- $_ = set $c "resources" $resources -}}
{{- end -}}
{{- if $settings -}}
{{- $annotations := $tmpl.metadata.annotations | default dict -}}
{{- $_ = set $annotations "sandgate.io/config-checksum" ($settings | toJson | sha256sum) -}}
{{- $_ = set $tmpl.metadata "annotations" $annotations -}}
{{- end -}}
{{- end -}}

{{/*
sandgate.config merges settings into a generated ConfigMap's data:
(list $ configmap settings). The claim settings stay as shipped, since the
admission policy reads them from its own copy. With exposure=subdomain,
USER_DOMAIN and PUBLIC_ORIGIN follow ingress.userDomain and ingress.host,
the Ingress's hosts: where they differ from what the ConfigMap ships they
join settings, so that they roll the pods too.
*/}}
{{- define "sandgate.config" -}}
{{- $ := index . 0 -}}
{{- $o := index . 1 -}}
{{- $settings := index . 2 -}}
{{- $fixed := dict "CLAIM_PREFIX" "the admission policy reads it too" "WARM_POOL" "the admission policy reads it too" -}}
{{- $site := dict -}}
{{- if eq $.Values.exposure "subdomain" -}}
{{- $host := lower $.Values.ingress.host -}}
{{- $under := printf ".%s" (lower $.Values.ingress.userDomain) -}}
{{- if and (hasSuffix $under $host) (not (contains "." (trimSuffix $under $host))) -}}
{{- fail (printf "ingress.host %q is one label under ingress.userDomain, where the user origins are: use a host outside it" $.Values.ingress.host) -}}
{{- end -}}
{{- $fixed = merge $fixed (dict "USER_DOMAIN" "set ingress.userDomain" "PUBLIC_ORIGIN" "set ingress.host") -}}
{{- $site = dict "USER_DOMAIN" $.Values.ingress.userDomain "PUBLIC_ORIGIN" (printf "https://%s" $.Values.ingress.host) -}}
{{- end -}}
{{- range $k, $v := $settings -}}
{{- if hasKey $fixed $k -}}
{{- fail (printf "%s is fixed in the chart: %s" $k (index $fixed $k)) -}}
{{- end -}}
{{- end -}}
{{- range $k, $v := $site -}}
{{- if and (hasKey $o.data $k) (ne (index $o.data $k) $v) -}}
{{- $_ := set $settings $k $v -}}
{{- end -}}
{{- end -}}
{{- range $k, $v := $settings -}}
{{- $_ := set $o.data $k (toString $v) -}}
{{- end -}}
{{- end -}}
