/**
 * Parking through the `flotta` command: `serve --simulate` logs its agents in as subscribers, so the simulator's
 * LIMIT reaches the real claude CLI as the account's usage limit; `status` and `list` show the agents parked with
 * the time they resume, and `flotta unpark [NAME]` resumes them by hand.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runInProcess as runFlotta } from "./support/inProcess.js"
import { withServe } from "./support/serve.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-cli-parking-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

// The commands run in process (what they print is the check; that each starts as the binary: test/cli-help.test.ts).

/** Runs a command until its output matches, a tenth of a second apart. */
const until = async (project: string, args: ReadonlyArray<string>, pattern: RegExp, what: string) => {
  const end = Date.now() + 60_000
  while (true) {
    const ran = await runFlotta(project, args)
    if (ran.code === 0 && pattern.test(ran.stdout)) return ran.stdout
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${ran.stdout}${ran.stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe("flotta unpark", () => {
  it(
    "serve --simulate parks agents at a LIMIT; status and list show it; unpark resumes one, then the rest",
    async () => {
      const config = { agents: [{ name: "alpha" }, { name: "beta" }], store: "memory" }
      await withServe(path.join(dir, "limits"), { config }, async ({ project }) => {
        const prompted = await runFlotta(project, ["prompt", "alpha", "LIMIT 3600 the big job"])
        assert.strictEqual(prompted.code, 0, prompted.stderr)
        const status = await until(project, ["status", "alpha"], /parked/, "alpha parked")
        assert.match(status, /^alpha: parked until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(turn t1\), 0 queued, 0 turns/)
        const listed = await runFlotta(project, ["list"])
        assert.match(listed.stdout, /^alpha +parked until \S+Z/m)
        assert.match(listed.stdout, /^beta +parked until \S+Z/m)
        const queued = await runFlotta(project, ["prompt", "beta", "ECHO waiting for the reset"])
        assert.strictEqual(queued.code, 0, queued.stderr)

        const one = await runFlotta(project, ["unpark", "alpha"])
        assert.strictEqual(one.code, 0, one.stderr)
        assert.match(
          one.stdout,
          /^unparked alpha\nstill parked until \S+Z: beta \(oauth token #[0-9a-f]{8} at 127\.0\.0\.1:\d+, usage limit five_hour\)\n$/
        )
        assert.strictEqual(
          await until(project, ["result", "alpha", "t1"], /RESUMED/, "alpha's parked turn"),
          "RESUMED: the big job\n"
        )
        assert.match((await runFlotta(project, ["status", "beta"])).stdout, /^beta: parked until .*, 1 queued/)

        const rest = await runFlotta(project, ["unpark"])
        assert.strictEqual(rest.stdout, "unparked beta\n")
        assert.strictEqual(
          await until(project, ["result", "beta", "t1"], /ECHO/, "beta's queued turn"),
          "ECHO: waiting for the reset\n"
        )
        assert.strictEqual((await runFlotta(project, ["unpark"])).stdout, "nothing to unpark: no agent was parked\n")
        const unknown = await runFlotta(project, ["unpark", "ghost"])
        assert.match(unknown.stderr, /AgentNotFound: no agent named "ghost"/)

        const reports = await runFlotta(project, ["reports", "--agent", "alpha"])
        assert.deepStrictEqual(
          reports.stdout.trim().split("\n").map((l) => l.trim().split(/\s+/)[3]),
          ["spawned", "turn_started", "parked", "unparked", "result"]
        )
      })
    },
    180_000
  )
})
