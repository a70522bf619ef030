/**
 * The fake Messages API in a process of its own, so its work and its memory (it records every request) stay out
 * of the benchmark's event loop and heap. Prints `{"url": ...}` once listening; on stdin EOF it prints
 * `{"requests": n}` and exits.
 *   node --import tsx bench/support/fake-api.ts
 */
import { startFakeMessagesApi } from "../../test/support/FakeMessagesApi.js"

const api = await startFakeMessagesApi()
process.stdout.write(JSON.stringify({ url: api.url }) + "\n")
process.stdin.resume()
process.stdin.on("end", () => {
  process.stdout.write(JSON.stringify({ requests: api.requests.length }) + "\n")
  void api.close().finally(() => process.exit(0))
})
