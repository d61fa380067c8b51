package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Claim-side Ready reasons of upstream's claim controller that the
// extensions package does not name (upstream
// extensions/controllers/sandboxclaim_controller.go computeReadyCondition).
const (
	reasonInvalidMetadata           = "InvalidMetadata"
	reasonVolumeClaimTemplatesError = "VolumeClaimTemplatesError"
)

// claimRejection is why a claim's request cannot be met: a claim-side
// Ready reason and message; zero when it can.
type claimRejection struct{ reason, message string }

// checkMetadata applies the contract's rule to additionalPodMetadata:
// every label is in the sandbox.users.io domain (or under it) and valid.
// Annotations are not checked.
func checkMetadata(m agents.PodMetadata) claimRejection {
	for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
		domain, _, found := strings.Cut(k, "/")
		allowed := found && (domain == extensions.UserLabelDomain || strings.HasSuffix(domain, "."+extensions.UserLabelDomain))
		errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(m.Labels[k])...)
		if !allowed || len(errs) > 0 {
			return claimRejection{reasonInvalidMetadata, fmt.Sprintf("label %q: not a valid label in the %s domain %v", k, extensions.UserLabelDomain, errs)}
		}
	}
	return claimRejection{}
}

// checkInjection refuses a claim's env vars and volume claim templates
// that its template's policies do not allow (Disallowed is the default);
// under Allowed the claim may add but not replace.
func checkInjection(claim *extensions.SandboxClaim, tmpl *extensions.SandboxTemplate) claimRejection {
	envPolicy, vctPolicy := tmpl.Spec.EnvVarsInjectionPolicy, tmpl.Spec.VolumeClaimTemplatesPolicy
	if len(claim.Spec.Env) > 0 && (envPolicy == "" || envPolicy == extensions.InjectionDisallowed) {
		return claimRejection{extensions.ReasonEnvVarsInjectionRejected, "SandboxTemplate " + tmpl.Name + " does not allow env var injection"}
	}
	if len(claim.Spec.Env) > 0 && envPolicy == extensions.InjectionAllowed {
		for _, ctr := range tmpl.Spec.PodTemplate.Spec.Containers {
			for _, e := range claim.Spec.Env {
				if slices.ContainsFunc(ctr.Env, func(t corev1.EnvVar) bool { return t.Name == e.Name }) {
					return claimRejection{agents.ReasonReconcilerError, fmt.Sprintf("Error seen: environment variable override is not allowed by the template policy for variable %q", e.Name)}
				}
			}
		}
	}
	if len(claim.Spec.VolumeClaimTemplates) == 0 {
		return claimRejection{}
	}
	switch vctPolicy {
	case "", extensions.InjectionDisallowed:
		return claimRejection{reasonVolumeClaimTemplatesError, "SandboxTemplate " + tmpl.Name + " does not allow volume claim templates"}
	case extensions.InjectionAllowed:
		for _, v := range claim.Spec.VolumeClaimTemplates {
			if slices.ContainsFunc(tmpl.Spec.VolumeClaimTemplates, func(t agents.PersistentVolumeClaimTemplate) bool { return t.Metadata.Name == v.Metadata.Name }) {
				return claimRejection{reasonVolumeClaimTemplatesError, fmt.Sprintf("cannot override template volume %q", v.Metadata.Name)}
			}
		}
	}
	return claimRejection{}
}

// inject adds a claim's env vars and volume claim templates to a new
// Sandbox, replacing same-named ones under the Overrides policy.
func inject(sb *agents.Sandbox, claim *extensions.SandboxClaim) {
	for i := range sb.Spec.PodTemplate.Spec.Containers {
		ctr := &sb.Spec.PodTemplate.Spec.Containers[i]
		for _, e := range claim.Spec.Env {
			if j := slices.IndexFunc(ctr.Env, func(t corev1.EnvVar) bool { return t.Name == e.Name }); j >= 0 {
				ctr.Env[j] = e
			} else {
				ctr.Env = append(ctr.Env, e)
			}
		}
	}
	for _, v := range claim.Spec.VolumeClaimTemplates {
		vcts := &sb.Spec.VolumeClaimTemplates
		if j := slices.IndexFunc(*vcts, func(t agents.PersistentVolumeClaimTemplate) bool { return t.Metadata.Name == v.Metadata.Name }); j >= 0 {
			(*vcts)[j] = v
		} else {
			*vcts = append(*vcts, v)
		}
	}
}
