// What the bundles hold in place of the `undici` package. @effect/platform-node's HTTP server module imports its
// undici-based HTTP client too, and so 700 KiB of it would load with every server and `--simulate`; flotta never
// makes a request through that client (it uses the global fetch), so the package is left out. Should anything call
// it, it fails saying so.
const absent = () => {
  throw new Error("flotta's bundle leaves out the undici package: use the global fetch")
}
export default new Proxy({}, { get: absent })
