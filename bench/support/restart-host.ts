/**
 * The host of bench/restart.ts: a fleet over an SQLite store, in a process of its own so the benchmark can
 * kill it. `spawn`: starts N real sessions, teaches each a fact, says how long the starts took, and waits to
 * be killed. `resume`: opens the same store, and says how long until every agent was back, then asks each
 * for its fact. One JSON line per fact.
 *   node --import tsx bench/support/restart-host.ts spawn|resume <db> <root> <api url> <n>
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { createFleet } from "../../packages/core/src/Client.js"
import { offlineEnv } from "../../test/support/FakeMessagesApi.js"
import { CLAUDE } from "../lib.js"

const [phase, db, root, url, count] = process.argv.slice(2) as [string, string, string, string, string]
const names = Array.from({ length: Number(count) }, (_, i) => `agent-${i}`)
const say = (value: unknown) => process.stdout.write(JSON.stringify(value) + "\n")

const t0 = performance.now()
const fleet = createFleet({ claudePath: CLAUDE, store: { sqlite: db } })

if (phase === "spawn") {
  await fleet.list()
  const s0 = performance.now()
  await Promise.all(names.map((name) => {
    const dir = path.join(root, name)
    const cwd = path.join(dir, "work")
    fs.mkdirSync(cwd, { recursive: true })
    return fleet.spawn(name, { cwd, env: offlineEnv({ url }, dir) })
  }))
  say({ spawnMs: performance.now() - s0 })
  await Promise.all(names.map((name) => fleet.ask(name, `REMEMBER the code of ${name}`, { timeout: "10 minutes" })))
  say({ taught: names.length })
  setInterval(() => undefined, 1 << 30)
} else {
  const restored = await fleet.restored()
  say({ restoreMs: performance.now() - t0, restored: restored.restored.length, closed: restored.closed })
  const answers = await Promise.all(names.map((name) => fleet.ask(name, "RECALL", { timeout: "10 minutes" })))
  say({ remembered: answers.filter((a, i) => a === `The fact is: the code of ${names[i]}`).length })
  await fleet.shutdown()
  say({ done: true })
  process.exit(0)
}
