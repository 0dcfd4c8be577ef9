/**
 * The container's HEALTHCHECK (Dockerfile): exits 0 when this container's web process answers /api/health with 200,
 * 1 otherwise. Node alone, since the image has no curl or shell tools to spare; Kubernetes probes the route directly.
 */
const port = process.env.PORT ?? '3000'

fetch(`http://127.0.0.1:${port}/api/health`, { signal: AbortSignal.timeout(4_000) }).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
)
