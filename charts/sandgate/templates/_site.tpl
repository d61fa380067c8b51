{{/*
sandgate.host is a host of the shipped Ingresses as the site names it:
(list $ host). The wildcard of the user origins (subdomain) becomes
*.<ingress.userDomain>, any other host ingress.host.
*/}}
{{- define "sandgate.host" -}}
{{- $ := index . 0 -}}
{{- if hasPrefix "*." (index . 1) -}}
*.{{ $.Values.ingress.userDomain }}
{{- else -}}
{{ $.Values.ingress.host }}
{{- end -}}
{{- end -}}

{{/*
sandgate.networkPolicy puts the site's peers into a NetworkPolicy:
(list $ policy). An ingress peer that selects a whole namespace and no
pods in it is the ingress controller's (ingress.controllerNamespace); with
exposure=hostnetwork, an ipBlock peer is the node network, one peer for
each of hostNetwork.nodeCIDRs.
*/}}
{{- define "sandgate.networkPolicy" -}}
{{- $ := index . 0 -}}
{{- $spec := (index . 1).spec -}}
{{- range $r := $spec.ingress -}}
{{- range $p := $r.from -}}
{{- if and $p.namespaceSelector (not $p.podSelector) -}}
{{- $_ := set $p.namespaceSelector.matchLabels "kubernetes.io/metadata.name" $.Values.ingress.controllerNamespace -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if eq $.Values.exposure "hostnetwork" -}}
{{- $nodes := list -}}
{{- range $cidr := $.Values.hostNetwork.nodeCIDRs -}}
{{- $nodes = append $nodes (dict "ipBlock" (dict "cidr" (required "hostNetwork.nodeCIDRs holds an empty CIDR" $cidr))) -}}
{{- end -}}
{{- if not $nodes -}}
{{- fail "hostNetwork.nodeCIDRs is empty: a NetworkPolicy rule without peers admits every address" -}}
{{- end -}}
{{- range $r := concat ($spec.ingress | default list) ($spec.egress | default list) -}}
{{- $side := ternary "from" "to" (hasKey $r "from") -}}
{{- $peers := list -}}
{{- range $p := index $r $side -}}
{{- if $p.ipBlock -}}
{{- $peers = concat $peers $nodes -}}
{{- else -}}
{{- $peers = append $peers $p -}}
{{- end -}}
{{- end -}}
{{- if hasKey $r $side -}}
{{- $_ := set $r $side $peers -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
sandgate.sso sets the site's flags of oauth2-proxy's container:
(list $ deployment).
*/}}
{{- define "sandgate.sso" -}}
{{- $ := index . 0 -}}
{{- $flags := dict
  "--oidc-issuer-url" (required "sso.issuerURL: your OpenID Connect provider's issuer URL" $.Values.sso.issuerURL)
  "--allowed-group" (required "sso.allowedGroup: the group whose members get in" $.Values.sso.allowedGroup) -}}
{{- $c := index (index . 1).spec.template.spec.containers 0 -}}
{{- $args := list -}}
{{- range $a := $c.args -}}
{{- $flag := regexReplaceAll "=.*" $a "" -}}
{{- if hasKey $flags $flag -}}
{{- $a = printf "%s=%s" $flag (index $flags $flag) -}}
{{- end -}}
{{- $args = append $args $a -}}
{{- end -}}
{{- $_ := set $c "args" $args -}}
{{- end -}}
