import { afterEach, assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createFleet } from "../src/Client.js"
import type { ReportEntry } from "../src/ReportLog.js"
import { FAKE_CLAUDE, waitGone } from "./support.js"

const fleets: Array<ReturnType<typeof createFleet>> = []
const newFleet = () => {
  const fleet = createFleet({ executable: { command: process.execPath, prefixArgs: [FAKE_CLAUDE] } })
  fleets.push(fleet)
  return fleet
}
afterEach(async () => {
  await Promise.all(fleets.splice(0).map((f) => f.shutdown()))
})

describe("createFleet: the Promise facade", () => {
  it("spawns, asks, prompts and reads results", async () => {
    const fleet = newFleet()
    const info = await fleet.spawn("promised")
    assert.strictEqual(info.name, "promised")
    assert.strictEqual(await fleet.ask("promised", "hello"), "echo: hello")
    const turnId = await fleet.prompt("promised", "later")
    const result = await fleet.wait("promised", turnId)
    assert.strictEqual(result.text, "echo: later")
    assert.strictEqual((await fleet.watch("promised", turnId)).text, "echo: later")
    assert.strictEqual((await fleet.result("promised")).turnId, turnId)
    assert.strictEqual((await fleet.transcript("promised")).length, 2)
    assert.deepStrictEqual((await fleet.list()).map((i) => i.name), ["promised"])
  })

  it("rejects with the typed error object itself", async () => {
    const fleet = newFleet()
    await fleet.spawn("one")
    const error = await fleet.ask("nobody", "hi").then(() => null, (e: unknown) => e)
    assert.strictEqual((error as { _tag: string })._tag, "AgentNotFound")
    assert.match((error as Error).message, /live agents: one/)
    const failed = await fleet.ask("one", "error 500").then(() => null, (e: unknown) => e)
    assert.strictEqual((failed as { _tag: string; status: number })._tag, "TurnFailed")
    assert.strictEqual((failed as { status: number }).status, 500)
  })

  it("subscribe delivers live entries until unsubscribed", async () => {
    const fleet = newFleet()
    await fleet.spawn("watched")
    const seen: Array<ReportEntry> = []
    const unsubscribe = fleet.subscribe((entry) => seen.push(entry), { agent: "watched" })
    await new Promise((r) => setTimeout(r, 20))
    await fleet.ask("watched", "one")
    await new Promise((r) => setTimeout(r, 20))
    unsubscribe()
    await new Promise((r) => setTimeout(r, 20))
    await fleet.ask("watched", "two")
    await new Promise((r) => setTimeout(r, 20))
    assert.deepStrictEqual(seen.map((e) => e.kind), ["turn_started", "result"])
    const { entries, next } = await fleet.reports({ agent: "watched" })
    assert.deepStrictEqual(entries.map((e) => e.kind), ["spawned", "turn_started", "result", "turn_started", "result"])
    assert.isAbove(next, 0)
  })

  it("shutdown closes every agent and their children exit", async () => {
    const fleet = newFleet()
    const infos = await Promise.all(["x", "y"].map((n) => fleet.spawn(n)))
    await fleet.prompt("x", "hang")
    await fleet.shutdown()
    for (const info of infos) assert.isTrue(await Effect.runPromise(waitGone(info.pid!)))
  })
})
