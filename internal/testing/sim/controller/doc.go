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
//     itself (launch-type=cold); it mirrors the Sandbox's Ready and
//     Finished conditions, and refuses additionalPodMetadata labels
//     outside sandbox.users.io (InvalidMetadata) and env vars or volume
//     claim templates its template's policies forbid;
//   - a Running Sandbox has one pod named after it, its volume claims and,
//     with spec.service, a headless Service; Suspended deletes the pod and
//     keeps the rest. Suspended and Ready are present from the first
//     reconcile on.
//
// Options.Release picks the release it behaves as: v1.0.13 (ReleaseV1,
// the default) or v0.5.6 (ReleaseV05). They differ only where the contract
// says a release changed something a client can see:
//
//   - the agents.x-k8s.io/pod-name annotation: v0.5.6 writes the current
//     pod's name and clears it once the pod is gone; v1.0.13 never writes
//     it (it still clears a stale one), and labels the pod with its claim's
//     UID;
//   - PodScheduled mirrors the owned pod's condition in both; with no pod
//     v0.5.6 removes it, v1.0.13 says False/PodAbsent;
//   - Finished: v0.5.6 has it only while a finished pod exists; v1.0.13
//     adds it when a pod first finishes and never removes it (True through
//     a suspend, False/NotFinished once a later pod runs);
//   - Ready: v1.0.13 is False while the pod terminates; v0.5.6 reads the
//     pod's phase and Ready condition alone;
//   - an object the API server rejects as invalid (a Service named after a
//     Sandbox whose name is no DNS-1035 label, say): v1.0.13 reports
//     Ready False/InvalidConfiguration and tries again only once the spec
//     changes; v0.5.6 reports ReconcilerError and retries with backoff.
//
// It does not model spec.shutdownTime expiry (SandboxExpired), Events,
// metrics, network policies or the CRDs' own validation.
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
