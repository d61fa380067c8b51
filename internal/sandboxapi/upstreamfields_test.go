package sandboxapi_test

// field is one path of a kind's v1beta1 schema that sandgate reads or
// writes: the contract's "Fields a gateway reads or writes"
// (shared/reference/agent-sandbox-contract.md) and every field our types in
// internal/sandboxapi carry, which are the subset sandgate uses
// (TestUpstreamSchema fails on a field of ours missing here).
type field struct {
	// path runs from the schema root, "." between fields and "[]" into an
	// array's items.
	path string
	// use says who reads (r) or writes (w) it: the auth API, the sweeper,
	// the node proxy's informer, the manifests (manifests/sandbox), the
	// stand-in controller (sim) or the contract alone.
	use string
	// embedded marks a Kubernetes type (PodSpec, PersistentVolumeClaimSpec,
	// Condition, NetworkPolicy rules): its whole subtree is compared; fields
	// only our schema has (a newer Kubernetes API) are logged, since
	// upstream's schema prunes them.
	embedded bool
	// since names the release that added a field the oldest supported
	// release's CRDs lack (a "v1.0 field"); want is then what our schema
	// must say of it, as upstream's release notes do.
	since string
	want  map[string]any
	// known is an accepted difference and why; the test fails once it is
	// gone, so the note goes too.
	known string
}

// podTemplateFields and volumeClaimTemplateFields are the pod and volume blueprint
// of a Sandbox and a SandboxTemplate (the template's is copied into every
// Sandbox made from it).
func podTemplateFields(use string) []field {
	return []field{
		{path: "spec.podTemplate", use: use},
		{path: "spec.podTemplate.metadata", use: use},
		{path: "spec.podTemplate.metadata.labels", use: use},
		{path: "spec.podTemplate.metadata.annotations", use: use},
		{path: "spec.podTemplate.spec", use: use, embedded: true},
	}
}

func volumeClaimTemplateFields(use string) []field {
	return []field{
		{path: "spec.volumeClaimTemplates", use: use},
		{path: "spec.volumeClaimTemplates[].metadata", use: use},
		{path: "spec.volumeClaimTemplates[].metadata.name", use: use},
		{path: "spec.volumeClaimTemplates[].metadata.labels", use: use},
		{path: "spec.volumeClaimTemplates[].metadata.annotations", use: use},
		{path: "spec.volumeClaimTemplates[].spec", use: use, embedded: true},
	}
}

// usedFields are the fields per kind.
var usedFields = map[string][]field{
	"Sandbox": concat(
		[]field{
			{path: "spec", use: "w sim"},
			{path: "spec.operatingMode", use: "w auth API (wake), sweeper (suspend); r informer, sweeper"},
		},
		podTemplateFields("w sim (from the template)"),
		volumeClaimTemplateFields("w sim (from the template); r auth API (home volume)"),
		[]field{
			{path: "spec.service", use: "w sim (from the template)"},
			{path: "spec.shutdownTime", use: "contract"},
			{path: "spec.shutdownPolicy", use: "contract"},
			{path: "status", use: "w sim"},
			{path: "status.serviceFQDN", use: "w sim"},
			{path: "status.service", use: "w sim"},
			{path: "status.podIPs", use: "w sim; r informer"},
			{path: "status.nodeName", use: "w sim; r informer"},
			{path: "status.selector", use: "w sim"},
			{path: "status.conditions", use: "w sim; r informer, sweeper, auth API"},
			{path: "status.conditions[]", use: "w sim; r informer, sweeper, auth API", embedded: true},
		},
	),
	"SandboxClaim": concat(
		[]field{
			{path: "spec", use: "w auth API"},
			{path: "spec.warmPoolRef", use: "w auth API"},
			{path: "spec.warmPoolRef.name", use: "w auth API; r sim"},
			{path: "spec.additionalPodMetadata", use: "w auth API; r sim"},
			{path: "spec.additionalPodMetadata.labels", use: "w auth API (user label); r sim"},
			{path: "spec.additionalPodMetadata.annotations", use: "r sim"},
			{path: "spec.lifecycle", use: "contract (never set on user claims)"},
			{path: "spec.lifecycle.shutdownTime", use: "contract"},
			{path: "spec.lifecycle.ttlSecondsAfterFinished", use: "contract (never set on user claims)"},
			{path: "spec.lifecycle.shutdownPolicy", use: "contract; manifests' admission policy"},
			{path: "spec.env", use: "r sim; manifests' admission policy"},
			{path: "spec.env[]", use: "r sim; manifests' admission policy", embedded: true,
				known: "our item is corev1.EnvVar (value optional, valueFrom); upstream's is {name, value, containerName}, value required. " +
					"Nothing sandgate ships writes claim env; a Go type of upstream's shape needs internal/testing/sim/controller/adopt.go and manifests/admission_test.go changed with it"},
		},
		volumeClaimTemplateFields("r sim; manifests' admission policy"),
		[]field{
			{path: "status", use: "w sim"},
			{path: "status.sandbox", use: "w sim; r auth API, informer, sweeper"},
			{path: "status.sandbox.name", use: "w sim; r auth API, informer, sweeper (user -> claim -> Sandbox)"},
			{path: "status.sandbox.podIPs", use: "w sim"},
			{path: "status.conditions", use: "w sim; r auth API, sweeper"},
			{path: "status.conditions[]", use: "w sim; r auth API, sweeper", embedded: true},
		},
	),
	"SandboxWarmPool": {
		{path: "spec", use: "w manifests, sim tests"},
		{path: "spec.replicas", use: "w manifests; r sim"},
		{path: "spec.sandboxTemplateRef", use: "w manifests; r sim"},
		{path: "spec.sandboxTemplateRef.name", use: "w manifests; r sim"},
		{path: "spec.updateStrategy", use: "w manifests"},
		{path: "spec.updateStrategy.type", use: "w manifests"},
		{path: "spec.readinessGracePeriodSeconds", use: "contract", since: "v1.0.12",
			want: map[string]any{"type": "integer", "format": "int32", "minimum": 30, "required": false}},
		{path: "status", use: "w sim"},
		{path: "status.replicas", use: "w sim"},
		{path: "status.readyReplicas", use: "w sim; r demo, bench"},
		{path: "status.selector", use: "w sim"},
		{path: "status.observedGeneration", use: "contract"},
	},
	"SandboxTemplate": concat(
		[]field{{path: "spec", use: "w manifests"}},
		podTemplateFields("w manifests; r sim"),
		volumeClaimTemplateFields("w manifests; r sim"),
		[]field{
			{path: "spec.service", use: "w manifests; r sim"},
			{path: "spec.networkPolicy", use: "w manifests"},
			{path: "spec.networkPolicy.ingress", use: "w manifests", embedded: true},
			{path: "spec.networkPolicy.egress", use: "w manifests", embedded: true},
			{path: "spec.networkPolicyManagement", use: "w manifests"},
			{path: "spec.envVarsInjectionPolicy", use: "r sim"},
			{path: "spec.volumeClaimTemplatesPolicy", use: "r sim"},
		},
	),
}

func concat(parts ...[]field) []field {
	var out []field
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
