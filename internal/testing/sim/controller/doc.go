// Package controller is a STAND-IN for the agent-sandbox controller
// (kubernetes-sigs/agent-sandbox, v1beta1 API). It exists only for
// sandgate's tests and the local demo; no production binary may import it.
// It follows shared/reference/agent-sandbox-contract.md:
//
//   - a SandboxWarmPool keeps spec.replicas spare Sandboxes built from its
//     SandboxTemplate, named <pool>-xxxxx, labelled
//     agents.x-k8s.io/warm-pool-sandbox and controlled by the pool;
//   - a SandboxClaim adopts the oldest Ready spare (the Sandbox keeps its
//     name; pool labels go, launch-type=warm and claim-uid arrive, the
//     controller reference moves to the claim, additionalPodMetadata joins
//     the pod), or, with no Ready spare, creates a Sandbox named after
//     itself (launch-type=cold); it mirrors the Sandbox's Ready condition;
//   - a Running Sandbox has one pod named after it, its volume claims and,
//     with spec.service, a headless Service; Suspended deletes the pod and
//     keeps the rest, with the upstream Ready and Suspended conditions.
//
// The simulated cluster has no kube-controller-manager or scheduler, so the
// controller also garbage-collects by controller reference (confirming with
// the API server that an owner is gone), releases the pvc-protection
// finalizer of deleted claims no pod uses, and places each pod on a Ready
// Node itself. Against a real cluster (cmd/sandbox-controller-standin),
// Options.LeaveScheduling leaves placement to the kube-scheduler, as the
// real controller does. Delays stand in for adoption, cold start and resume
// times.
//
// It talks to the API server only through its clients, reads through
// informer caches and works off a rate-limited workqueue, like a real
// controller.
package controller
